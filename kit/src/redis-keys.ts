import type { RedisConn } from "./redis.js";
import type { WorkerName } from "./worker-beats.js";

// The Redis keys that one part of the system writes and another reads: their names and lifetimes
// are agreed here and nowhere else, so no part borrows another's. A key only one part touches
// stays with that part. Every key is namespaced by FEEDS_NAMESPACE (`conn.key`); a tenant's keys
// carry its hash tag (`conn.tenantKey`), so that one script may touch several of them in a cluster.

/**
 * The version stamp of a tenant's credential and status: tenancy replaces it on every rotation or
 * status change; the gateway reads it with each request, in the same script as the tenant's rate
 * windows (and stamps, NX, a tenant it sees first).
 */
export const tenantVersionKey = (conn: RedisConn, tenantId: string): string => conn.tenantKey(tenantId, "ver");

/**
 * The version stamp of the set of origins some tenant allows (CORS preflights): tenancy replaces
 * it on every change of a tenant's allowed origins; each gateway polls it and reloads the set
 * when it moved.
 */
export const allowedOriginsVersionKey = (conn: RedisConn): string => conn.key("origins", "ver");

/**
 * A user's revoked_before (epoch ms): identity moves it forward on a revocation; the gateway reads
 * it with each user-token request and fills it (NX) from identity when it is missing.
 */
export const revocationKey = (conn: RedisConn, tenantId: string, userId: string): string => conn.tenantKey(tenantId, "rv", userId);
/** Revocation keys are a cache of MongoDB: bounded so that a missed update cannot live forever. */
export const REVOCATION_TTL_SECONDS = 600;

/** The liveness beats of a worker (instance → time): its consumer loops write, readiness reads. */
export const workerBeatsKey = (conn: RedisConn, worker: WorkerName): string => conn.key("worker", worker);
