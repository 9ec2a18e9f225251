import { pino, type Logger } from "pino";
import type { Config } from "./config.js";
import { tracingOn, traceIds } from "./tracing.js";

export type { Logger };

/** A process's logger; with tracing on, each line written inside a span carries its `trace_id` and `span_id`. */
export function createLogger(config: Pick<Config, "LOG_LEVEL">, name: string): Logger {
  return pino({ name, level: config.LOG_LEVEL, base: { svc: name }, ...(tracingOn() ? { mixin: traceIds } : {}) });
}
