import { z } from "zod";

// Zod schemas → OpenAPI 3.0 Schema Objects, with every registered shape pulled out into
// components.schemas and referenced from where it is used.

type Json = Record<string, unknown>;
const namedFormats: ReadonlySet<unknown> = new Set(["uuid", "date-time"]);

/** Rewrites zod's `#/definitions/X` references to the document's components. */
function relink(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(relink);
  if (node === null || typeof node !== "object") return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "$ref" && typeof v === "string" ? v.replace("#/definitions/", "#/components/schemas/") : relink(v);
  }
  // A nullable named shape is `{nullable, allOf: [$ref]}`; 3.0 wants a type beside `nullable`
  // (every named shape is an object).
  if (out.nullable === true && Array.isArray(out.allOf) && out.type === undefined) out.type = "object";
  return out;
}

/**
 * A renderer of one side (`input` for requests, `output` for answers): `render(schema)` answers
 * the schema's Object (a $ref when the schema itself is named) and gathers the named shapes it
 * uses into `components`, which two sides share (a name must mean one shape).
 */
export function createSchemaRenderer(io: "input" | "output", names: readonly (readonly [string, z.ZodType])[], components: Record<string, Json>) {
  const registry = z.registry<{ id: string }>();
  const add = (name: string, schema: z.ZodType) => {
    if (!registry.has(schema)) registry.add(schema, { id: name });
  };
  for (const [name, schema] of names) add(name, schema);

  function render(schema: z.ZodType): Json {
    const js = z.toJSONSchema(schema, {
      target: "openapi-3.0",
      io,
      metadata: registry,
      unrepresentable: "any",
      override: ({ zodSchema, jsonSchema }) => {
        // A uuid or date-time says so by its format alone (zod's regex adds nothing a reader uses).
        if (namedFormats.has(jsonSchema.format)) delete jsonSchema.pattern;
        // Descriptions live in zod's global registry, ids in ours.
        const description = z.globalRegistry.get(zodSchema as unknown as z.ZodType)?.description;
        if (description !== undefined && jsonSchema.description === undefined) jsonSchema.description = description;
      },
    }) as Json;
    const { definitions, ...rest } = js as Json & { definitions?: Record<string, Json> };
    for (const [name, def] of Object.entries(definitions ?? {})) {
      const linked = relink(def) as Json;
      delete linked.id;
      const known = components[name];
      if (known !== undefined && JSON.stringify(known) !== JSON.stringify(linked)) {
        throw new Error(`component ${name} has two shapes (requests and answers need their own names)`);
      }
      components[name] = linked;
    }
    return relink(rest) as Json;
  }

  return { render, add };
}
