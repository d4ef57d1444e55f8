// Numeric job parameters described by a kind's JSON schema (GET /job-kinds → params_schema), so the launch
// form takes its defaults, bounds and help text from the API instead of repeating them.
import { isObject, numberAt, objectAt, stringAt, type JsonObject } from "./json";

export interface NumericParam {
  name: string;
  title: string;
  description: string;
  integer: boolean;
  default: number | null;
  minimum: number | null;
  maximum: number | null;
  /** May be left empty (an `anyOf` with null: the API then decides). */
  nullable: boolean;
}

const isNumeric = (type: string | null) => type === "integer" || type === "number";

export function numericParam(schema: JsonObject, name: string): NumericParam | null {
  const property = objectAt(schema, `properties.${name}`);
  if (!property) return null;
  // `int | None` comes as {"anyOf": [{"type": "integer", "minimum": …}, {"type": "null"}], "default": null}.
  const variants = Array.isArray(property.anyOf) ? property.anyOf.filter(isObject) : [property];
  const numeric = variants.find((v) => isNumeric(stringAt(v, "type")));
  if (!numeric) return null;
  return {
    name,
    title: stringAt(property, "title") ?? name,
    description: stringAt(property, "description") ?? "",
    integer: stringAt(numeric, "type") === "integer",
    default: numberAt(property, "default"),
    minimum: numberAt(numeric, "minimum"),
    maximum: numberAt(numeric, "maximum"),
    nullable: variants.some((v) => stringAt(v, "type") === "null"),
  };
}

/** A form value checked against the parameter's type and bounds: the number, or why it is refused. */
export function parseParam(param: NumericParam, text: string): number | string | null {
  if (param.nullable && text.trim() === "") return null;
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isFinite(value)) return `${param.title} must be a number`;
  if (param.integer && !Number.isInteger(value)) return `${param.title} must be a whole number`;
  if (param.minimum !== null && value < param.minimum) return `${param.title} must be at least ${param.minimum}`;
  if (param.maximum !== null && value > param.maximum) return `${param.title} must be at most ${param.maximum}`;
  return value;
}
