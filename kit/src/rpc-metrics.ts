import { Code } from "@connectrpc/connect";
import type { DescMethod } from "@bufbuild/protobuf";
import type { Histogram } from "prom-client";
import { processMetrics } from "./metrics.js";

// Times each served call into feeds_rpc_duration_seconds. The labelled series of a method and
// code is looked up once and kept, so a call costs a clock read and one observation.

type Series = Histogram.Internal<"service" | "method" | "code">;

/** `OK`, or the Connect code's name (`NotFound`, `Unavailable`, ...), as gRPC names them. */
const codeName = (code: Code | null) => (code === null ? "OK" : (Code[code] ?? "Unknown"));

export function createRpcTimer(histogram = processMetrics().rpcDuration) {
  const series = new WeakMap<DescMethod, Map<Code | null, Series>>();
  const seriesOf = (method: DescMethod, code: Code | null): Series => {
    let byCode = series.get(method);
    if (!byCode) series.set(method, (byCode = new Map<Code | null, Series>()));
    let s = byCode.get(code);
    if (!s) {
      s = histogram.labels({ service: method.parent.typeName, method: method.name, code: codeName(code) });
      byCode.set(code, s);
    }
    return s;
  };
  return {
    /** Starts timing a call; the answer ends it once with its code (null: OK). */
    start(method: DescMethod): (code: Code | null) => void {
      const t0 = performance.now();
      let ended = false;
      return (code) => {
        if (ended) return;
        ended = true;
        seriesOf(method, code).observe((performance.now() - t0) / 1000);
      };
    },
  };
}
