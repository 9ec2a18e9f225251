import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { conflict, errorTable, FeedsError, fromRpcError, rateLimited, toConnectError, validationFailed } from "../src/index.js";

describe("the error table", () => {
  it("maps every interface code to its HTTP status", () => {
    expect(Object.fromEntries(Object.entries(errorTable).map(([k, v]) => [k, v.status]))).toEqual({
      VALIDATION_FAILED: 400,
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      RATE_LIMITED: 429,
      CONTENT_REJECTED: 422,
      INTERNAL: 500,
    });
  });

  it("survives the RPC boundary with code, message and fields", () => {
    for (const err of [validationFailed([{ path: "a.b", message: "bad" }]), conflict("no active owner would remain"), new FeedsError("CONTENT_REJECTED", "blocked term")]) {
      const wire = toConnectError(err);
      const back = fromRpcError(wire);
      expect(back.code).toBe(err.code);
      expect(back.message).toBe(err.message);
      expect(back.fields).toEqual(err.fields);
    }
  });

  it("never puts internal failures on the wire", () => {
    const wire = toConnectError(new Error("connection string mongodb://secret@host"));
    expect(wire.code).toBe(Code.Internal);
    expect(wire.rawMessage).toBe("internal error");
    expect(fromRpcError(wire).code).toBe("INTERNAL");
  });

  it("treats foreign Connect errors by their code, and unknown ones as INTERNAL", () => {
    expect(fromRpcError(new ConnectError("x", Code.NotFound)).code).toBe("NOT_FOUND");
    expect(fromRpcError(new ConnectError("x", Code.Unavailable)).code).toBe("INTERNAL");
    expect(fromRpcError(new ConnectError("x", Code.DeadlineExceeded)).code).toBe("INTERNAL");
  });

  it("marks retryable codes and carries Retry-After", () => {
    const e = rateLimited(7);
    expect(e.retryable).toBe(true);
    expect(e.retryAfterSeconds).toBe(7);
    expect(validationFailed([]).retryable).toBe(false);
  });
});
