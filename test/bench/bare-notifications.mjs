// The floor of the notification page bench: a bare Fastify app doing the notification service's
// MongoDB work directly, with the driver options of bare-fastify.mjs. No auth, no rate limit, no
// RPC, no Redis. Own process.
//
//   GET /v1/notifications?owner=…&limit=20&next=…&users=0|1   the keyset query on notifications
//       ({tenant_id, owner} sorted {created_at:-1, _id:-1}, limit n+1; with `next` the same $or
//       filter the service uses) beside the two counts (seen_at null, read_at null), then (users=1,
//       the default) the actors' user records {_id: {$in}}; answers {results, next, unseen, unread}.
//
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT. Prints {"ready":true,"url":...}.
import Fastify from "fastify";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const db = client.db(process.env.FEEDS_NAMESPACE);
const tenant = process.env.BENCH_TENANT;
const notifications = db.collection("notifications");
const users = db.collection("users");
const encodeCursor = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
const decodeCursor = (s) => JSON.parse(Buffer.from(s, "base64url").toString("utf8"));
const iso = (d) => (d instanceof Date ? d.toISOString() : null);

const app = Fastify({ logger: false });
app.get("/v1/notifications", async (req) => {
  const owner = String(req.query.owner);
  const limit = Math.max(1, Math.min(100, Number(req.query.limit ?? 20) || 20));
  const after = req.query.next ? decodeCursor(req.query.next) : null;
  const base = { tenant_id: tenant, owner };
  const filter = after
    ? { ...base, $or: [{ created_at: { $lt: new Date(after[0]) } }, { created_at: new Date(after[0]), _id: { $lt: after[1] } }] }
    : base;
  const [rows, unseen, unread] = await Promise.all([
    notifications.find(filter).sort({ created_at: -1, _id: -1 }).limit(limit + 1).toArray(),
    notifications.countDocuments({ ...base, seen_at: null }),
    notifications.countDocuments({ ...base, read_at: null }),
  ]);
  const page = rows.slice(0, limit);
  const ids = [...new Set(page.filter((n) => n.actor.startsWith("user:")).map((n) => n.actor.slice(5)))];
  const byId =
    req.query.users !== "0" && ids.length
      ? new Map((await users.find({ _id: { $in: ids.map((u) => `${tenant}/${u}`) } }).toArray()).map((u) => [u.id, { id: u.id, custom: JSON.parse(u.custom_json || "{}") }]))
      : new Map();
  const last = page[page.length - 1];
  return {
    results: page.map((n) => ({
      id: n._id,
      verb: n.verb,
      actor: n.actor,
      object: n.object,
      reaction_kind: n.reaction_kind,
      activity_id: n.activity_id,
      created_at: iso(n.created_at),
      seen_at: iso(n.seen_at),
      read_at: iso(n.read_at),
      actor_user: byId.get(n.actor.slice(5)) ?? null,
    })),
    next: rows.length > limit && last ? encodeCursor([last.created_at.getTime(), last._id]) : null,
    unseen,
    unread,
  };
});
await serveBare(app, client);
