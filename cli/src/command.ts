import type { ParseArgsConfig } from "node:util";
import type { Context } from "./context.js";
import { usageError } from "./errors.js";

export type Options = NonNullable<ParseArgsConfig["options"]>;
export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** One command: its words (`tenant create`), arguments, options and what it does. */
export interface Command {
  name: string;
  /** Positional arguments as the usage line shows them (`<name>`). */
  args: string;
  summary: string;
  options: Options;
  /** One line per option for `feeds <command> --help`. */
  optionHelp: string[];
  /** Fewest and most positional arguments. */
  positionals: readonly [number, number];
  run(ctx: Context, positionals: string[], values: Values): Promise<void>;
}

export function str(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

export function required(values: Values, name: string): string {
  const v = str(values, name);
  if (v === undefined || v === "") throw usageError(`--${name} is required`);
  return v;
}

export const bool = (values: Values, name: string): boolean => values[name] === true;

export function list(values: Values, name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}
