import { inject } from "vitest";

/** One scrape of a Prometheus text endpoint: `name{labels}` → value (all series of all metrics). */
export async function scrape(url = inject("metricsUrl")): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The sum of every series of `name` whose labels include all of `labels`. */
export function total(scraped: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [series, value] of scraped) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}
