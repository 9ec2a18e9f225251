import { create, isMessage, type DescMessage, type DescMethod, type DescMethodStreaming, type DescMethodUnary, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import {
  ConnectError,
  createContextValues,
  createHandlerContext,
  createServiceImplSpec,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { getAbortSignalReason, invokeUnaryImplementation, runStreamingCall, runUnaryCall, transformInvokeImplementation } from "@connectrpc/connect/protocol";

// The one-process system's unary calls, without the wire: the client interceptors, then the
// server interceptors and the implementation, called with the request message itself; the answer
// is the implementation's message. What a call through Connect's router transport also does
// (encode and decode both messages, frame them, a handler per call with its streams and
// headers) was about half the CPU of a warm feed read. The interceptors are the same as on every
// other transport (the call is signed and verified, errors mapped, timed), the server side gets
// fresh context values (only what the verified token says), a deadline or cancelled signal
// rejects the call as over the wire. Messages are passed by reference: neither side changes a
// message after handing it over (requests are built per call; answers are read, not edited).
// Server-streaming calls (the fan-out's follower pass, one per activity) go the same way: the
// implementation's messages are handed to the caller as they come, behind the same interceptors,
// with Connect's deadline and cancel handling (runStreamingCall); through the router, a stream's
// async-iterable plumbing, envelopes, fetch headers and abort signals were about a tenth of the
// one-process system's CPU per added activity. Client and bidi streams (none here) take the
// router transport (`streams`). A unary call with neither a deadline nor a signal of its caller
// (nearly all) also skips the abort signals and timers Connect would set up for it, six per
// call: nothing could abort it, and no implementation here listens.

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
type ServerStreamingSpec = Extract<MethodImplSpec, { kind: "server_streaming" }>;
type Unary = (req: UnaryRequest) => Promise<UnaryResponse>;

/** Never aborted: the signal of calls nothing can abort. */
const NEVER = new AbortController().signal;

/** Interceptors around `next`, the first outermost (as Connect applies them). */
const chain = (interceptors: Interceptor[], next: Unary): Unary =>
  interceptors.reduceRight<Unary>((n, i) => i(n as never) as unknown as Unary, next);

/** What an implementation is handed for a call that has no deadline and cannot be aborted. */
function plainContext(req: UnaryRequest, url: string): HandlerContext {
  return {
    service: req.service,
    method: req.method,
    protocolName: "in-process",
    requestMethod: "POST",
    url,
    signal: NEVER,
    timeoutMs: () => undefined,
    requestHeader: req.header,
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: createContextValues(),
  };
}

/** Collects the unary and server-streaming implementations that `routes` mounts. */
function implSpecs(routes: (router: ConnectRouter) => void): { unary: Map<string, UnarySpec>; serverStreaming: Map<string, ServerStreamingSpec> } {
  const unary = new Map<string, UnarySpec>();
  const serverStreaming = new Map<string, ServerStreamingSpec>();
  const collector = {
    service(desc, impl) {
      const spec = createServiceImplSpec(desc, impl);
      for (const m of Object.values(spec.methods)) {
        if (m.kind === "unary") unary.set(`${desc.typeName}/${m.method.name}`, m);
        if (m.kind === "server_streaming") serverStreaming.set(`${desc.typeName}/${m.method.name}`, m);
      }
      return collector;
    },
  } as Pick<ConnectRouter, "service"> as ConnectRouter;
  routes(collector);
  return { unary, serverStreaming };
}

/**
 * `messages` as its reader sees them: each read rejects once `signal` aborts (a deadline, a
 * cancelled call) even while the implementation is still working on the next message; `finish`
 * runs once, when the stream ends, fails or is left.
 */
function readUntilAborted<T>(messages: AsyncIterable<T>, signal: AbortSignal, finish: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const it = messages[Symbol.asyncIterator]();
      let finished = false;
      const end = () => {
        if (!finished) {
          finished = true;
          finish();
        }
      };
      return {
        next: () =>
          untilAborted(it.next(), signal).then(
            (r) => {
              if (r.done === true) end();
              return r;
            },
            (e: unknown) => {
              end();
              throw e;
            },
          ),
        return: async (value?: unknown) => {
          end();
          return (await it.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

/** What a call's request says beside its kind and message. */
const callOf = <M extends DescMethod>(method: M, url: string, header: ConstructorParameters<typeof Headers>[0], contextValues: ContextValues | undefined) => ({
  service: method.parent,
  method,
  requestMethod: "POST" as const,
  url,
  header: new Headers(header),
  contextValues: contextValues ?? createContextValues(),
});

/** The server side of a call that has a deadline or a signal: fresh context values (only what the
 * verified token says), aborted with the call. */
const serverContext = (method: DescMethod, url: string, req: { header: Headers; signal: AbortSignal }, timeoutMs: number | undefined) =>
  createHandlerContext({
    service: method.parent,
    method,
    protocolName: "in-process",
    requestMethod: "POST",
    url,
    requestHeader: req.header,
    requestSignal: req.signal,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    contextValues: createContextValues(),
  });

/** `p`, or the signal's reason once it aborts (a deadline, a cancelled call). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  const reason = () => {
    const r = getAbortSignalReason(signal);
    return r instanceof Error ? r : new Error(String(r));
  };
  if (signal.aborted) return Promise.reject(reason());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reason());
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

export function createDirectTransport(opts: {
  routes: (router: ConnectRouter) => void;
  clientInterceptors: Interceptor[];
  serverInterceptors: Interceptor[];
  /** Streaming calls (and any method not mounted here) go this way. */
  streams: Transport;
}): Transport {
  const { unary: specs, serverStreaming } = implSpecs(opts.routes);
  const { clientInterceptors, serverInterceptors, streams } = opts;
  const urlOf = (req: UnaryRequest) => `in-process:/${req.method.parent.typeName}/${req.method.name}`;
  // The plain path: client interceptors, then the server side with a plain context.
  const plain = chain(clientInterceptors, async (req) => {
    const spec = specs.get(`${req.method.parent.typeName}/${req.method.name}`) as UnarySpec;
    const ctx = plainContext(req, urlOf(req));
    const message = await invokeUnaryImplementation(spec, ctx, req.message, serverInterceptors);
    return { stream: false, service: req.service, method: req.method, header: ctx.responseHeader, trailer: ctx.responseTrailer, message };
  });

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const spec = specs.get(`${method.parent.typeName}/${method.name}`);
      if (!spec) return streams.unary(method, signal, timeoutMs, header, input, contextValues);
      const url = `in-process:/${method.parent.typeName}/${method.name}`;
      if (!signal && timeoutMs === undefined) {
        const req: UnaryRequest<I, O> = {
          stream: false,
          service: method.parent,
          method,
          requestMethod: "POST",
          url,
          signal: NEVER,
          header: new Headers(header),
          contextValues: contextValues ?? createContextValues(),
          message: isMessage(input, method.input) ? input : create(method.input, input),
        };
        try {
          return (await plain(req)) as unknown as UnaryResponse<I, O>;
        } catch (e) {
          throw ConnectError.from(e);
        }
      }
      return runUnaryCall<I, O>({
        interceptors: clientInterceptors,
        signal,
        timeoutMs,
        req: { stream: false, ...callOf(method, url, header, contextValues), message: input },
        next: async (req) => {
          const ctx = serverContext(method, url, req, timeoutMs);
          try {
            const message = (await untilAborted(invokeUnaryImplementation(spec, ctx, req.message, serverInterceptors), req.signal)) as MessageShape<O>;
            return { stream: false, service: method.parent, method, header: ctx.responseHeader, trailer: ctx.responseTrailer, message };
          } finally {
            ctx.abort();
          }
        },
      });
    },
    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: ConstructorParameters<typeof Headers>[0],
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const spec = serverStreaming.get(`${method.parent.typeName}/${method.name}`);
      if (!spec) return streams.stream(method, signal, timeoutMs, header, input, contextValues);
      const url = `in-process:/${method.parent.typeName}/${method.name}`;
      return runStreamingCall<I, O>({
        interceptors: clientInterceptors,
        ...(signal ? { signal } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        req: { stream: true, ...callOf(method, url, header, contextValues), message: input },
        next: async (req) => {
          const ctx = serverContext(method, url, req, timeoutMs);
          // The server interceptors run when the first message is asked for, as over the wire.
          const messages = transformInvokeImplementation(spec, ctx, serverInterceptors)(req.message) as AsyncIterable<MessageShape<O>>;
          return {
            stream: true,
            service: method.parent,
            method,
            header: ctx.responseHeader,
            trailer: ctx.responseTrailer,
            message: readUntilAborted(messages, ctx.signal, () => ctx.abort()),
          };
        },
      });
    },
  };
}
