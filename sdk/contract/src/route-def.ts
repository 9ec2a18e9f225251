import { z } from "zod";
import type { ErrorCode } from "./errors.js";

// What one route is, as data: verb, path template, who may call it, what it is for, and the
// schemas of its request and of each answer. The one route table: the SDK's methods are built on
// these, the gateway registers its handler against each and validates with its schemas, and the
// OpenAPI document is generated from them.

/**
 * Who may call a route. tenant: server or user token; server / user: that kind only;
 * operator: any operator session; member: owner or member of a tenant (staff 403);
 * owner: tenant owner only; staff: platform staff only (/admin); none: no credential.
 */
export type AuthKind = "none" | "tenant" | "server" | "user" | "operator" | "member" | "owner" | "staff";
export type RouteVerb = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Schema of the body of each answer a route gives on success, by status; null: no body. */
export type ResponseSchemas = Readonly<Record<number, z.ZodType | null>>;

export interface RouteDef {
  readonly method: RouteVerb;
  /** OpenAPI path template: `/v1/activities/{id}/reactions`. */
  readonly path: string;
  readonly auth: AuthKind;
  /** One line for the reference: what the route does and its notable answers. */
  readonly summary: string;
  /** Reference sections the route is listed under. */
  readonly tags: readonly string[];
  /**
   * The success status the gateway answers unless its handler picks another of `responses`
   * (default: the lowest 2xx of `responses`).
   */
  readonly status?: number;
  /**
   * Error codes the route answers beyond those its auth kind, input and verb imply
   * (for example CONTENT_REJECTED where a tenant's blocklist applies).
   */
  readonly errors?: readonly ErrorCode[];
  readonly params?: z.ZodType;
  readonly query?: z.ZodType;
  readonly body?: z.ZodType;
  readonly responses: ResponseSchemas;
  /** The media type of the success answer (default application/json; the stream: text/event-stream). */
  readonly contentType?: "text/event-stream";
}

/** Declares a route, keeping its literal types (the answer type comes from `responses`). */
export const route = <const R extends RouteDef>(def: R): R => def;

/** The status a route answers on success unless its handler picks another. */
export function successStatus(def: RouteDef): number {
  if (def.status !== undefined) return def.status;
  const ok = Object.keys(def.responses).map(Number).filter((s) => s >= 200 && s < 300);
  return ok.length ? Math.min(...ok) : 200;
}

/** What the gateway hands a route's handler: the parsed params, query and body of its definition. */
export type ParsedInput<S> = S extends z.ZodType ? z.output<S> : undefined;

type BodyOf<S> = S extends z.ZodType ? z.output<S> : undefined;
/** What a route answers: the output type of any of its response schemas (undefined for none). */
export type RouteAnswer<R extends RouteDef> = { [K in keyof R["responses"]]: BodyOf<R["responses"][K]> }[keyof R["responses"]];
/** What a route answers with `status`. */
export type RouteAnswerAt<R extends RouteDef, S extends keyof R["responses"]> = BodyOf<R["responses"][S]>;

/** The path of a route with its `{name}` placeholders filled in, each value URL-encoded. */
export function pathOf(def: RouteDef, params: Readonly<Record<string, string | number>> = {}): string {
  return def.path.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${def.method} ${def.path}: missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
}

const namedFormats: ReadonlySet<unknown> = new Set(["uuid", "date-time"]);

/**
 * A schema rendered as an OpenAPI 3.0 Schema Object (nullable, no $schema or const), as the
 * gateway's /openapi.json shows it: requests as `input`, answers as `output`. A uuid or date-time
 * says so by its `format` alone (zod's equivalent regex adds nothing a reader can use).
 */
export const openApiSchema = (schema: z.ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, {
    target: "openapi-3.0",
    io,
    unrepresentable: "any",
    override: ({ jsonSchema }) => {
      if (namedFormats.has(jsonSchema.format)) delete jsonSchema.pattern;
    },
  });

/** An answer that does not have the shape its route declares (thrown with `validateResponses`). */
export class ResponseValidationError extends Error {
  override readonly name = "ResponseValidationError";
  constructor(
    readonly route: string,
    readonly status: number,
    readonly problems: string[],
  ) {
    super(`${route} answered ${status} with a body its schema does not describe: ${problems.join("; ")}`);
  }
}

/** Keys of `raw` that parsing dropped: fields the answer carries but its schema does not name. */
function unnamedFields(parsed: unknown, raw: unknown, at: string, out: string[]): string[] {
  if (Array.isArray(raw) && Array.isArray(parsed)) {
    raw.forEach((item, i) => unnamedFields(parsed[i], item, `${at}.${i}`, out));
  } else if (raw !== null && typeof raw === "object" && parsed !== null && typeof parsed === "object") {
    for (const [k, v] of Object.entries(raw)) {
      if (!Object.hasOwn(parsed, k)) out.push(`${at}.${k}: not in the schema`);
      else unnamedFields((parsed as Record<string, unknown>)[k], v, `${at}.${k}`, out);
    }
  }
  return out;
}

/**
 * Checks an answer against its route: a status the route declares, a body its schema accepts,
 * and no field the schema does not name. Throws ResponseValidationError otherwise.
 */
export function checkAnswer(def: RouteDef, status: number, body: unknown): void {
  const name = `${def.method} ${def.path}`;
  const schema = def.responses[status];
  if (schema === undefined) throw new ResponseValidationError(name, status, [`the route does not declare status ${status}`]);
  if (schema === null) {
    if (body !== undefined) throw new ResponseValidationError(name, status, ["expected no body"]);
    return;
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const at = (path: PropertyKey[]) => `body${path.map((p) => `.${String(p)}`).join("")}`;
    throw new ResponseValidationError(name, status, parsed.error.issues.map((i) => `${at(i.path)}: ${i.message}`));
  }
  const unnamed = unnamedFields(parsed.data, body, "body", []);
  if (unnamed.length) throw new ResponseValidationError(name, status, unnamed);
}

/**
 * The routes of every group by operationId: a route's key in its group, which is also the SDK's
 * method name. Throws when two groups use one key (an operationId must name one operation).
 */
export function byOperationId(groups: Readonly<Record<string, Readonly<Record<string, RouteDef>>>>): Readonly<Record<string, RouteDef>> {
  const out: Record<string, RouteDef> = {};
  const seen = new Map<string, string>();
  for (const [group, defs] of Object.entries(groups)) {
    for (const [id, def] of Object.entries(defs)) {
      const other = seen.get(id);
      if (other !== undefined) throw new Error(`operationId ${id} is a key of both ${other} and ${group}`);
      seen.set(id, group);
      out[id] = def;
    }
  }
  return out;
}
