// The floor of the notification page bench: a bare Fastify app doing the notification service's
// MongoDB work directly, with the driver options of bare-fastify.mjs. No auth, no rate limit, no
// RPC, no Redis. Own process.
//
//   GET /v1/notifications?owner=…&limit=20&next=…&users=0|1   the keyset query on notifications
//       ({tenant_id, owner} sorted {created_at:-1, _id:-1}, limit n+1; with `next` the same $or
//       filter the service uses) beside the two counts (seen_at null, read_at null), then (users=1,
//       the default) the actors' user records {_id: {$in}}; answers {results, next, unseen, unread}.
//
//   GET /v1/notifications/groups?owner=…&limit=20   the grouped page (issue 23) as the service
//       reads it: the keyset query on notification_groups ({tenant_id, owner} sorted
//       {updated_at:-1, _id:-1}, limit n+1), the owner's unseen and unread groups (one aggregate
//       over the owner's groups with unseen or unread members, by those two counts; each group's
//       state is its own counts), the page's latest members and actors in one query each (5 per group on the page), one more per
//       group a busier one crowded out, then the users of both; answers {results, next, unseen, unread}.
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
const groups = db.collection("notification_groups");
const groupActors = db.collection("notification_group_actors");
/** The owner's groups with an unseen (unread) member: one aggregate over the groups, as the service counts them. */
const groupCounts = async (base) => {
  const rows = await groups
    .aggregate([{ $match: { ...base, $or: [{ unseen: { $gt: 0 } }, { unread: { $gt: 0 } }] } }, { $group: { _id: { s: "$unseen", r: "$unread" }, n: { $sum: 1 } } }])
    .toArray();
  let unseen = 0;
  let unread = 0;
  for (const { _id, n } of rows) {
    if (_id.s > 0) unseen += n;
    if (_id.r > 0) unread += n;
  }
  return { unseen, unread };
};
const notificationJson = (n, byId) => ({
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
});
app.get("/v1/notifications/groups", async (req) => {
  const owner = String(req.query.owner);
  const limit = Math.max(1, Math.min(100, Number(req.query.limit ?? 20) || 20));
  const base = { tenant_id: tenant, owner };
  const [rows, counts] = await Promise.all([groups.find(base).sort({ updated_at: -1, _id: -1 }).limit(limit + 1).toArray(), groupCounts(base)]);
  const page = rows.slice(0, limit);
  const keys = page.map((g) => g._id);
  const [members, actorRows] = await Promise.all([
    notifications.find({ ...base, group_key: { $in: keys } }).sort({ created_at: -1, _id: -1 }).limit(5 * page.length).toArray(),
    groupActors.find({ tenant_id: tenant, group_key: { $in: keys } }).sort({ last_at: -1, _id: -1 }).limit(5 * page.length).toArray(),
  ]);
  const bucket = (rows, value) => {
    const m = new Map();
    for (const r of rows) m.set(r.group_key, [...(m.get(r.group_key) ?? []), value(r)]);
    return m;
  };
  const latestBy = bucket(members, (n) => n);
  const actorsBy = bucket(actorRows, (a) => a.actor);
  const shown = await Promise.all(
    page.map(async (g) => {
      let latest = latestBy.get(g._id) ?? [];
      if (latest.length < Math.min(5, g.activity_count)) latest = await notifications.find({ ...base, group_key: g._id }).sort({ created_at: -1, _id: -1 }).limit(6).toArray();
      let actors = actorsBy.get(g._id) ?? [];
      if (actors.length < Math.min(5, g.actor_count))
        actors = (await groupActors.find({ tenant_id: tenant, group_key: g._id }).sort({ last_at: -1, _id: -1 }).limit(5).toArray()).map((a) => a.actor);
      return { actors: actors.slice(0, 5), latest: latest.slice(0, 5) };
    }),
  );
  const ids = [...new Set(shown.flatMap((s) => [...s.actors, ...s.latest.map((n) => n.actor)]).filter((a) => a.startsWith("user:")).map((a) => a.slice(5)))];
  const byId = ids.length
    ? new Map((await users.find({ _id: { $in: ids.map((u) => `${tenant}/${u}`) } }).toArray()).map((u) => [u.id, { id: u.id, custom: JSON.parse(u.custom_json || "{}") }]))
    : new Map();
  const last = page[page.length - 1];
  return {
    results: page.map((g, i) => ({
      group_key: g._id,
      verb: g.verb,
      reaction_kind: g.reaction_kind,
      object: g.object,
      activity_id: g.activity_id,
      activity_count: g.activity_count,
      actor_count: g.actor_count,
      actors: shown[i].actors.map((a) => byId.get(a.slice(5)) ?? { id: a.slice(5), custom: {} }),
      latest: shown[i].latest.map((n) => notificationJson(n, byId)),
      first_at: iso(g.first_at),
      updated_at: iso(g.updated_at),
      seen_at: (g.unseen ?? 0) > 0 ? null : iso(g.seen_at ?? g.updated_at),
      read_at: (g.unread ?? 0) > 0 ? null : iso(g.read_at ?? g.updated_at),
    })),
    next: rows.length > limit && last ? encodeCursor([last.updated_at.getTime(), last._id]) : null,
    unseen: counts.unseen,
    unread: counts.unread,
  };
});
await serveBare(app, client);
