import { z } from "zod";
import { route } from "./route-def.js";
import { tenantIdParams } from "./schemas.js";
import { adminTenantSchema, tenantSchema } from "./responses-operator.js";

// The browser origins a tenant allows (CORS, docs/cors.md): set by its owner or by platform staff.

export const originLimits = {
  /** Origins one tenant may allow. */
  origins: 20,
  /** Characters of one origin (scheme, host of at most 253 characters, port). */
  originChars: 270,
} as const;

/**
 * Why `s` is not an origin as a browser sends it in its `Origin` header (`scheme://host[:port]`,
 * http or https, lowercase host, no default port, path, query, fragment, userinfo or wildcard),
 * or null when it is one. Nothing is rewritten: an origin is stored as given, so a form the
 * browser never sends (`https://App.example:443/`) is refused with the form to write instead.
 */
export function originProblem(s: string): string | null {
  if (s.length > originLimits.originChars) return `at most ${originLimits.originChars} characters`;
  if (s.includes("*")) return "an exact origin: no wildcard";
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    return "an origin: scheme://host[:port]";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "http or https only";
  if (url.username || url.password) return "no userinfo";
  if (!url.hostname) return "a host is required";
  if (url.origin !== s) return `an exact origin, written as the browser sends it: ${url.origin}`;
  return null;
}

const origin = z.string().superRefine((s, ctx) => {
  const problem = originProblem(s);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** `PUT …/origins`: the whole list, replacing the one stored (duplicates are removed; [] allows none). */
export const originsBody = z.object({
  origins: z.array(origin).max(originLimits.origins).describe(`exact origins such as https://app.example; at most ${originLimits.origins}`),
});

/** Origins in order of first appearance, each once. */
export const distinctOrigins = (origins: readonly string[]): string[] => [...new Set(origins)];

export const operatorOriginRoutes = {
  setOrigins: route({ method: "PUT", path: "/operator/tenant/origins", auth: "owner", body: originsBody, responses: { 200: tenantSchema } }),
};

export const adminOriginRoutes = {
  setTenantOrigins: route({
    method: "PUT",
    path: "/admin/tenants/{id}/origins",
    auth: "staff",
    params: tenantIdParams,
    body: originsBody,
    responses: { 200: adminTenantSchema },
  }),
};
