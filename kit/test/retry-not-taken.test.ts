import { ConnectError, Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { notTakenByServer, retryNotTaken } from "../src/rpc.js";

// A call a stopping service never took (its stream refused after GOAWAY) is sent again; any other
// failure, and any streaming call, is not. test/split/rolling-restart.test.ts shows it end to end.

const refused = () => new ConnectError("Stream closed with error code NGHTTP2_REFUSED_STREAM", Code.Internal, undefined, undefined, Object.assign(new Error("Stream closed with error code NGHTTP2_REFUSED_STREAM"), { code: "ERR_HTTP2_STREAM_ERROR" }));

describe("retryNotTaken", () => {
  it("tells a refused or never-opened stream from a failure of the call", () => {
    expect(notTakenByServer(refused())).toBe(true);
    expect(notTakenByServer(new Error("outer", { cause: Object.assign(new Error("New streams cannot be created after receiving a GOAWAY"), { code: "ERR_HTTP2_GOAWAY_SESSION" }) }))).toBe(true);
    expect(notTakenByServer(new ConnectError("deadline", Code.DeadlineExceeded))).toBe(false);
    expect(notTakenByServer(new ConnectError("Stream closed with error code NGHTTP2_CANCEL", Code.Internal))).toBe(false);
    expect(notTakenByServer("REFUSED_STREAM")).toBe(false);
  });

  it("sends a unary call again at most twice while the server refuses it, never a streaming one or another failure", async () => {
    const run = async (failures: (Error | undefined)[], stream = false) => {
      let calls = 0;
      const next = async () => {
        const f = failures[calls++];
        if (f) throw f;
        return { ok: true };
      };
      const call = retryNotTaken(next as never);
      const outcome = await (call({ stream } as never) as Promise<unknown>).then(
        () => "ok",
        () => "failed",
      );
      return { outcome, calls };
    };
    expect(await run([refused()])).toEqual({ outcome: "ok", calls: 2 });
    expect(await run([refused(), refused()])).toEqual({ outcome: "ok", calls: 3 });
    expect(await run([refused(), refused(), refused()])).toEqual({ outcome: "failed", calls: 3 });
    expect(await run([new ConnectError("nope", Code.Unavailable)])).toEqual({ outcome: "failed", calls: 1 });
    expect(await run([refused()], true)).toEqual({ outcome: "failed", calls: 1 });
  });
});
