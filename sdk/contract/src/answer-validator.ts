import { checkAnswer, ResponseValidationError, type RouteDef } from "./route-def.js";
import { routes } from "./routes.js";

/** A route as a client names it: verb and path template. */
export interface RouteRef {
  readonly method: string;
  readonly path: string;
}

/** Checks one answer of a route; throws ResponseValidationError when it does not fit. */
export type AnswerValidator = (route: RouteRef, status: number, body: unknown) => void;

/**
 * The zod check of every answer, for a client's `validateResponses` option: the route's declared
 * statuses, its answer schema, and no field the schema does not name. @feeds/client takes it only
 * when asked, so a browser bundle carries zod only then.
 */
export function answerValidator(): AnswerValidator {
  const byRoute = new Map<string, RouteDef>();
  for (const group of Object.values(routes)) {
    for (const def of Object.values(group) as RouteDef[]) byRoute.set(`${def.method} ${def.path}`, def);
  }
  return (route, status, body) => {
    const def = byRoute.get(`${route.method} ${route.path}`);
    if (def === undefined) throw new ResponseValidationError(`${route.method} ${route.path}`, status, ["not a route of the table"]);
    checkAnswer(def, status, body);
  };
}
