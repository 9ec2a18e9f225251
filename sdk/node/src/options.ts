import { answerValidator, type AnswerValidator } from "@feeds/contract";
import type { ClientOptions as BrowserClientOptions } from "@feeds/client";

/** Options every node client takes: those of @feeds/client, with `validateResponses: true` meaning zod's check. */
export interface ClientOptions extends Omit<BrowserClientOptions, "validateResponses"> {
  /**
   * Check every answer against its route's response schema: a status the route declares, a body
   * the schema accepts and no field it does not name; otherwise throw ResponseValidationError.
   * Default false (answers are typed, not checked).
   */
  validateResponses?: boolean | AnswerValidator | undefined;
}

/** The answer check a `validateResponses` option asks for. */
export function validatorOf(option: ClientOptions["validateResponses"]): AnswerValidator | undefined {
  if (option === true) return answerValidator();
  return option === false ? undefined : option;
}
