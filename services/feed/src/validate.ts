import { GROUP_PATTERN, ID_PATTERN, MAX_CUSTOM_BYTES, validationFailed, type FieldError } from "@feeds/kit";
import type { NewActivity } from "@feeds/proto/feeds/feed/v1/feed";
import type { FeedRef } from "@feeds/proto/feeds/common/v1/common";

const REF = /^([A-Za-z0-9_\-.@]{1,128}):([A-Za-z0-9_\-.@]{1,128})$/;

export function feedKey(ref: FeedRef | undefined): string {
  if (!ref || !GROUP_PATTERN.test(ref.group) || !ID_PATTERN.test(ref.id)) {
    throw validationFailed([{ path: "feed", message: "feed must be group:id" }]);
  }
  return `${ref.group}:${ref.id}`;
}

export function checkRefs(refs: string[], prefix = "refs"): FieldError[] {
  const errors: FieldError[] = [];
  if (refs.length > 4) errors.push({ path: prefix, message: "at most 4 refs" });
  refs.forEach((r, i) => {
    if (!REF.test(r)) errors.push({ path: `${prefix}.${i}`, message: "must be type:id" });
    else if (refs.indexOf(r) !== i) errors.push({ path: `${prefix}.${i}`, message: "duplicate ref" });
  });
  return errors;
}

export function parseCustom(json: string, path = "custom"): Record<string, unknown> {
  if (Buffer.byteLength(json) > MAX_CUSTOM_BYTES) throw validationFailed([{ path, message: "must be at most 64 KB" }]);
  try {
    const v: unknown = JSON.parse(json || "{}");
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* reported below */
  }
  throw validationFailed([{ path, message: "must be an object" }]);
}

/** The contract's rules for an activity body (section 4 lengths, refs, custom). */
export function checkActivity(a: NewActivity | undefined): FieldError[] {
  if (!a) return [{ path: "", message: "activity required" }];
  const errors: FieldError[] = [];
  const len = (v: string | undefined, path: string, max: number, required: boolean) => {
    if (v === undefined || v === "") {
      if (required) errors.push({ path, message: "required" });
    } else if (v.length > max) errors.push({ path, message: `at most ${max} characters` });
  };
  len(a.actor, "actor", 256, true);
  len(a.verb, "verb", 64, true);
  len(a.object, "object", 256, true);
  len(a.target, "target", 256, false);
  len(a.foreignId, "foreign_id", 256, false);
  if (a.foreignId && !a.time) errors.push({ path: "time", message: "foreign_id requires time" });
  errors.push(...checkRefs(a.refs));
  return errors;
}
