import { context, propagation, trace, SpanKind, SpanStatusCode, type Attributes, type Context, type Span, type TextMapGetter, type TextMapSetter } from "@opentelemetry/api";

// Traces (OpenTelemetry). The SDK is started, or not, by the `--import` hook (otel.ts) before any
// of this runs; this module only uses the API. With the SDK off every helper here answers at once
// (no span, no header, no context switch): `tracingOn()` is one global read.
//
// W3C trace context travels as `traceparent` (and `tracestate`) headers on every hop: Connect
// calls (request headers, rpc-context.ts), JetStream messages (message headers; a pending change
// of the outbox keeps its writer's context with its messages, so the relay's later publish joins
// the same trace), and the webhook POST.

/** Set by the hook once the SDK runs (a global: the hook and this module may be separate copies). */
const ON = Symbol.for("feeds.tracing.on");
/** The hook's shutdown (flushes spans still batched); set with ON. */
const SHUTDOWN = Symbol.for("feeds.tracing.shutdown");
type Flags = { [ON]?: boolean; [SHUTDOWN]?: () => Promise<void> };

/** Whether the OpenTelemetry SDK was started in this process (the hook found OTEL_* configured). */
export const tracingOn = (): boolean => (globalThis as Flags)[ON] === true;

/** The hook: marks tracing on and leaves its shutdown for `flushTraces`. */
export function markTracingOn(shutdown: () => Promise<void>): void {
  (globalThis as Flags)[ON] = true;
  (globalThis as Flags)[SHUTDOWN] = shutdown;
}

/** Exports the spans still batched (a process about to exit); nothing when tracing is off. */
export async function flushTraces(): Promise<void> {
  await (globalThis as Flags)[SHUTDOWN]?.().catch(() => undefined);
}

const tracer = () => trace.getTracer("feeds");

/** Something headers can be set on and read from: Fetch `Headers`, NATS `MsgHdrs`. */
interface HeaderLike {
  set(k: string, v: string): void;
  get(k: string): string | null | undefined;
}
const setter: TextMapSetter<HeaderLike> = { set: (c, k, v) => c.set(k, v) };
const getter: TextMapGetter<HeaderLike> = {
  get: (c, k) => c.get(k) ?? undefined,
  keys: () => ["traceparent", "tracestate", "baggage"],
};
const recordSetter: TextMapSetter<Record<string, string>> = { set: (c, k, v) => (c[k] = v) };

/** The active trace context as headers (`traceparent`, ...), or undefined: tracing off or no active span. */
export function traceHeaders(): Record<string, string> | undefined {
  if (!tracingOn() || !trace.getActiveSpan()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier, recordSetter);
  return carrier.traceparent ? carrier : undefined;
}

/** Sets the active trace context's headers on `headers` (no-op when tracing is off). */
export function injectTrace(headers: HeaderLike): void {
  if (!tracingOn()) return;
  propagation.inject(context.active(), headers, setter);
}

/** The context `headers` carry (the active one when they carry none). */
function extracted(headers: HeaderLike | undefined): Context {
  return headers ? propagation.extract(context.active(), headers, getter) : context.active();
}

const failed = (span: Span, err: unknown) => {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
};

/**
 * Runs `fn` in a new span `name` (child of the active span, or of `parent` headers' context), ended
 * when `fn` settles; an error marks it failed. Tracing off: `fn()` alone.
 */
export function inSpan<T>(
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: HeaderLike | undefined },
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingOn()) return fn(undefined);
  const parent = opts.parent ? extracted(opts.parent) : context.active();
  return tracer().startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, ...(opts.attributes ? { attributes: opts.attributes } : {}) }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Starts a span `name` and runs `fn` with it active, but leaves ending it to the caller (a
 * streamed answer ends when its last message is read). Tracing off: undefined, `fn()` alone.
 */
export function startSpan<T>(name: string, opts: { kind: SpanKind; attributes?: Attributes; parent?: HeaderLike }, fn: (span: Span | undefined) => T): T {
  if (!tracingOn()) return fn(undefined);
  const parent = opts.parent ? extracted(opts.parent) : context.active();
  const span = tracer().startSpan(name, { kind: opts.kind, ...(opts.attributes ? { attributes: opts.attributes } : {}) }, parent);
  return context.with(trace.setSpan(parent, span), () => fn(span));
}

/** Ends a span from `startSpan`, failed when `err` is given. */
export function endSpan(span: Span | undefined, err?: unknown): void {
  if (!span) return;
  if (err !== undefined) failed(span, err);
  span.end();
}

/** Names the active (HTTP server) span after its route, e.g. `POST /v1/feeds/:group/:id/activities`. */
export function nameServerSpan(method: string, route: string): void {
  const span = tracingOn() ? trace.getActiveSpan() : undefined;
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute("http.route", route);
}

/** pino's mixin: the active span's trace and span ids in every log line written inside one. */
export function traceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

export { SpanKind, SpanStatusCode };
