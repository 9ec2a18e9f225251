import { MAX_CUSTOM_BYTES, validationFailed, type FieldError } from "@feeds/kit";

type Json = Record<string, unknown>;

/** Splits `custom.a.b` into ["a", "b"]; anything outside `custom.` is a field error. */
function pathOf(path: string, field: string, errors: FieldError[]): string[] | null {
  const parts = path.split(".");
  if (parts[0] !== "custom" || parts.length < 2 || parts.some((p) => p === "")) {
    errors.push({ path: field, message: "paths must start with `custom.`" });
    return null;
  }
  return parts.slice(1);
}

/** Applies `set` ("custom.<path>" → value) and `unset` ("custom.<path>") to a custom object. */
export function patchCustom(custom: Json, set: Json, unset: string[]): Json {
  const errors: FieldError[] = [];
  const out = structuredClone(custom);
  for (const [path, value] of Object.entries(set)) {
    const parts = pathOf(path, `set.${path}`, errors);
    if (!parts) continue;
    let node: Json = out;
    for (const p of parts.slice(0, -1)) {
      const next = node[p];
      if (typeof next !== "object" || next === null || Array.isArray(next)) node[p] = {};
      node = node[p] as Json;
    }
    node[parts[parts.length - 1] as string] = value;
  }
  unset.forEach((path, i) => {
    const parts = pathOf(path, `unset.${i}`, errors);
    if (!parts) return;
    let node: unknown = out;
    for (const p of parts.slice(0, -1)) {
      node = typeof node === "object" && node !== null ? (node as Json)[p] : undefined;
    }
    if (typeof node === "object" && node !== null) delete (node as Json)[parts[parts.length - 1] as string];
  });
  if (errors.length) throw validationFailed(errors);
  if (Buffer.byteLength(JSON.stringify(out)) > MAX_CUSTOM_BYTES) {
    throw validationFailed([{ path: "custom", message: "must be at most 64 KB" }]);
  }
  return out;
}
