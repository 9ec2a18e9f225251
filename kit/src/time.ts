import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";

export const toTimestamp = (d: Date): Timestamp => timestampFromDate(d);
export const fromTimestamp = (t: Timestamp | undefined): Date | null => (t ? timestampDate(t) : null);
/** ISO 8601 with milliseconds, the interface's date-time format. */
export const isoOf = (t: Timestamp | undefined): string | null => (t ? timestampDate(t).toISOString() : null);

/** `p`, or a rejection ("timeout") once `ms` have passed first; the timer goes either way. */
export async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("timeout")), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
