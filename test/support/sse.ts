import { request, type IncomingMessage } from "node:http";
import { baseUrl } from "./api.js";

// A Server-Sent Events client for the stream tests: one GET, its frames parsed as they arrive
// (the SSE wire format: `field: value` lines, a blank line ends a frame, `:` starts a comment).

export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  /** A comment frame (`: ...`). */
  comment?: string;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage["headers"];
  /** The JSON body of an answer other than 200. */
  body: any;
  frames: SseFrame[];
  /** The frames that carry an event (not comments, not the retry/id-only start). */
  events(): (SseFrame & { json: any })[];
  /** Waits until `pred` holds of the frames so far (default 20 s). */
  until(what: string, pred: (s: SseStream) => boolean, timeoutMs?: number): Promise<void>;
  /** The id of the last frame that carried one (the client's cursor). */
  lastId(): string | undefined;
  /** Resolves when the server ended the answer. */
  ended: Promise<void>;
  isEnded(): boolean;
  /** Stops reading the socket (the client does not read); resume() reads again. */
  pause(): void;
  resume(): void;
  close(): void;
}

export function openStream(path: string, opts: { token?: string; headers?: Record<string, string>; url?: string } = {}): Promise<SseStream> {
  const url = new URL(path, opts.url ?? baseUrl());
  const headers: Record<string, string> = { accept: "text/event-stream", ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", headers }, (res) => {
      const frames: SseFrame[] = [];
      let ended = false;
      let buffer = "";
      let current: SseFrame = {};
      let endedResolve: () => void = () => undefined;
      const endedP = new Promise<void>((r) => (endedResolve = r));
      res.on("end", () => {
        ended = true;
        endedResolve();
      });
      res.on("close", () => {
        ended = true;
        endedResolve();
      });
      res.on("error", () => undefined);
      const s: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: undefined,
        frames,
        events: () =>
          frames.filter((f) => f.event !== undefined).map((f) => ({ ...f, json: f.data !== undefined ? JSON.parse(f.data) : undefined })),
        async until(what, pred, timeoutMs = 20_000) {
          const deadline = Date.now() + timeoutMs;
          while (!pred(s)) {
            if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames.slice(-5))}`);
            await new Promise((r) => setTimeout(r, 25));
          }
        },
        lastId: () => [...frames].reverse().find((f) => f.id !== undefined)?.id,
        ended: endedP,
        isEnded: () => ended,
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => {
          req.destroy();
        },
      };
      if (s.status !== 200) {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          try {
            s.body = JSON.parse(text);
          } catch {
            s.body = text;
          }
          resolve(s);
        });
        return;
      }
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl).replace(/\r$/, "");
          buffer = buffer.slice(nl + 1);
          if (line === "") {
            if (Object.keys(current).length) frames.push(current);
            current = {};
            continue;
          }
          if (line.startsWith(":")) {
            current.comment = line.slice(1).trim();
            continue;
          }
          const at = line.indexOf(":");
          const field = at < 0 ? line : line.slice(0, at);
          const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
          if (field === "id") current.id = value;
          else if (field === "event") current.event = value;
          else if (field === "data") current.data = current.data === undefined ? value : `${current.data}\n${value}`;
          else if (field === "retry") current.retry = Number(value);
        }
      });
      resolve(s);
    });
    req.on("error", reject);
    req.end();
  });
}
