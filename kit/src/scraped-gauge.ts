import { Gauge } from "prom-client";
import type { Metrics } from "./metrics.js";

// Gauges read from elsewhere (JetStream, the readiness checks) when scraped. One read serves every
// gauge of a scrape and any scrape within `maxAgeMs`, so a scrape storm costs the source little.
// A failed read leaves no sample rather than a stale one.

/** The latest `read()`, shared by callers within `maxAgeMs`. */
export function cachedRead<T>(read: () => Promise<T>, maxAgeMs: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= maxAgeMs) last = { at: now, value: read() };
    return last.value;
  };
}

export function registerScrapedGauge<T, L extends string>(
  metrics: Metrics,
  spec: { name: string; help: string; labelNames: readonly L[] },
  read: () => Promise<T>,
  samples: (value: T) => [Record<L, string>, number][],
  onError: (err: unknown) => void,
): void {
  new Gauge<L>({
    ...spec,
    registers: [metrics.registry],
    async collect() {
      this.reset();
      try {
        for (const [labels, v] of samples(await read())) this.set(labels as never, v);
      } catch (err) {
        onError(err);
      }
    },
  });
}
