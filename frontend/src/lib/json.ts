// Narrowing of the API's free-form JSON documents (model inspections, the job kinds' JSON Schemas), which
// the OpenAPI spec types as {[key: string]: unknown}. Job results are typed: read them through api/types.

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value at a dotted path ("labels.calibration.ece_shift"), or undefined. */
export function at(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split(".")) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

export function numberAt(value: unknown, path: string): number | null {
  const found = at(value, path);
  return typeof found === "number" ? found : null;
}

export function stringAt(value: unknown, path: string): string | null {
  const found = at(value, path);
  return typeof found === "string" ? found : null;
}

export function objectAt(value: unknown, path: string): JsonObject | null {
  const found = at(value, path);
  return isObject(found) ? found : null;
}

export function arrayAt(value: unknown, path: string): unknown[] {
  const found = at(value, path);
  return Array.isArray(found) ? found : [];
}

export function stringsAt(value: unknown, path: string): string[] {
  return arrayAt(value, path).filter((v): v is string => typeof v === "string");
}
