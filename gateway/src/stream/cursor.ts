// A stream cursor (the SSE `id:`): the sequence of an event in the live NATS stream (one total
// order over every event) and the time it was stored or observed, which tells whether the replay
// window still holds everything after it. Opaque to clients: base64url of `<seq>.<ms>`.

export interface Position {
  seq: number;
  ms: number;
}

export const encodeCursor = (p: Position): string => Buffer.from(`${p.seq}.${p.ms}`, "utf8").toString("base64url");

/** The position a cursor names, or null when it is not one this gateway wrote. */
export function decodeCursor(s: string): Position | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(s)) return null;
  const m = /^(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(s, "base64url").toString("utf8"));
  if (!m) return null;
  const seq = Number(m[1]);
  const ms = Number(m[2]);
  return Number.isSafeInteger(seq) && Number.isSafeInteger(ms) ? { seq, ms } : null;
}
