import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";

export const toTimestamp = (d: Date): Timestamp => timestampFromDate(d);
export const fromTimestamp = (t: Timestamp | undefined): Date | null => (t ? timestampDate(t) : null);
/** ISO 8601 with milliseconds, the interface's date-time format. */
export const isoOf = (t: Timestamp | undefined): string | null => (t ? timestampDate(t).toISOString() : null);
