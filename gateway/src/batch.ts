/** One entry of a batch answer (the interface's Batch result item). */
export interface BatchItemResult {
  index: number;
  ok: boolean;
  id?: string;
  code?: string;
}

/**
 * The batch rule shared by every batch route: an item that fails `convert` fails alone with
 * VALIDATION_FAILED; the others go to the service in one call, whose per-item answers (in the
 * order sent) fill their positions. `withId`: successful items carry their id (users, activities).
 */
export async function runBatch<T>(
  items: unknown[],
  convert: (raw: unknown) => T | null,
  send: (valid: T[]) => Promise<{ ok: boolean; id: string; code: string }[]>,
  opts: { withId?: boolean } = {},
): Promise<{ results: BatchItemResult[] }> {
  const converted = items.map(convert);
  const valid = converted.flatMap((value, index) => (value === null ? [] : [{ index, value }]));
  const answers = valid.length ? await send(valid.map((v) => v.value)) : [];
  const results: BatchItemResult[] = converted.map((_, index) => ({ index, ok: false, code: "VALIDATION_FAILED" }));
  answers.forEach((a, i) => {
    const index = valid[i]?.index as number;
    results[index] = a.ok ? { index, ok: true, ...(opts.withId ? { id: a.id } : {}) } : { index, ok: false, code: a.code || "INTERNAL" };
  });
  return { results };
}
