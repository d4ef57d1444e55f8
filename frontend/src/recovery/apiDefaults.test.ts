// The launch form's starting values are the API's own defaults, read from the OpenAPI spec the API generates
// (frontend/openapi.json, `npm run spec:write`), so a default changed on the server cannot drift silently here.
import { describe, expect, it } from "vitest";
import spec from "../../openapi.json";
import { DEFAULT_ADAROUND, DEFAULT_TRAINING } from "./training";

type Schemas = Record<string, { properties: Record<string, { default?: unknown }> }>;
const schemas = (spec as unknown as { components: { schemas: Schemas } }).components.schemas;

const defaults = (schema: string, keys: readonly string[]) =>
  Object.fromEntries(keys.map((k) => [k, schemas[schema]?.properties[k]?.default]));

describe("recovery launch defaults", () => {
  it("are AdaRoundIn's defaults", () => {
    expect(DEFAULT_ADAROUND).toEqual(defaults("AdaRoundIn", Object.keys(DEFAULT_ADAROUND)));
  });

  it("are the training methods' defaults (distill and qat alike)", () => {
    expect(DEFAULT_TRAINING).toEqual(defaults("DistillIn", Object.keys(DEFAULT_TRAINING)));
    expect(DEFAULT_TRAINING).toEqual(defaults("QatIn", Object.keys(DEFAULT_TRAINING)));
  });
});
