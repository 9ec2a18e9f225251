import { OperatorClient as BrowserOperatorClient, type OperatorClientOptions as BrowserOperatorClientOptions } from "@feeds/client";
import { validatorOf, type ClientOptions } from "./options.js";

export interface OperatorClientOptions extends ClientOptions, Omit<BrowserOperatorClientOptions, keyof ClientOptions | "validateResponses"> {}

/** @feeds/client's OperatorClient, taking `validateResponses: true` for zod's check of every answer. */
export class OperatorClient extends BrowserOperatorClient {
  constructor(options: OperatorClientOptions) {
    super({ ...options, validateResponses: validatorOf(options.validateResponses) });
  }
}
