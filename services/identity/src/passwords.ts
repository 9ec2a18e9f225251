import argon2 from "argon2";
import { randomBytes } from "node:crypto";

// OWASP argon2id parameters: 19 MiB memory, 2 iterations, 1 lane.
const params = { type: argon2.argon2id, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string): Promise<string> => argon2.hash(password, params);

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/** A hash of a random password with the same parameters: unknown emails verify against it, so
 * every login failure costs one argon2id verification. */
export const createDummyHash = (): Promise<string> => hashPassword(randomBytes(32).toString("hex"));
