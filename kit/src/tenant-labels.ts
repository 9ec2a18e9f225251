// Bounded tenant labels for per-tenant metrics: at most `limit` tenants have a label of their
// own, the rest share `other`, so the series cannot grow with the number of tenants. Labels go to
// the first tenants seen while there is room; every epoch the tenants of the highest volume (in
// that epoch, half of the one before) take the labels, and a tenant that loses its label is
// forgotten (`forget` removes its series; its later figures count under `other`).

export const OTHER_TENANT = "other";
const EPOCH_MS = 10 * 60_000;

export interface TenantLabels {
  /** The label of `tenant` for one unit of its volume. */
  label(tenant: string, now?: number): string;
  setLimit(limit: number): void;
  /** Tenants that have a label of their own now. */
  labelled(): string[];
}

export function createTenantLabels(limit: number, opts: { forget(tenant: string): void; epochMs?: number }): TenantLabels {
  const epochMs = opts.epochMs ?? EPOCH_MS;
  let volume = new Map<string, number>();
  let labelled = new Set<string>();
  let epochEnd = 0;

  function rerank(now: number) {
    epochEnd = now + epochMs;
    const top = new Set([...volume].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([t]) => t));
    for (const t of labelled) if (!top.has(t)) opts.forget(t);
    labelled = top;
    const decayed = new Map<string, number>();
    for (const [t, v] of volume) if (v >= 2) decayed.set(t, v / 2);
    volume = decayed;
  }

  return {
    label(tenant, now = Date.now()) {
      volume.set(tenant, (volume.get(tenant) ?? 0) + 1);
      if (now >= epochEnd) {
        if (epochEnd === 0) epochEnd = now + epochMs;
        else rerank(now);
      }
      if (labelled.has(tenant)) return tenant;
      if (labelled.size < limit) {
        labelled.add(tenant);
        return tenant;
      }
      return OTHER_TENANT;
    },
    setLimit(n) {
      limit = n;
      if (labelled.size > n) rerank(Date.now());
    },
    labelled: () => [...labelled],
  };
}
