// The floors of benches 6 and 8: a bare Fastify app doing the feed service's MongoDB work directly,
// with the driver options of bare-fastify.mjs (bench 1's floor). No auth, no rate limit, no RPC,
// no Redis, no enrichment services. Own process.
//
//   GET  /v1/feeds/:group/:id?limit=20&next=…   a feed page: the keyset query on feed_entries
//        ({tenant_id, feed} sorted {time:-1, activity_id:-1}, limit n+1; with `next` the same $or
//        keyset filter the feed service uses), then activities {_id: {$in}, tenant_id}, then users
//        {_id: {$in: `${tenant}/${userId}`}}, then objects {_id: {$in: `${tenant}/${type}/${id}`}},
//        one after the other; answers {results (with actor_user), next, objects} as JSON.
//   POST /v1/feeds/:group/:id/activities        one activity document and one origin entry, two
//        inserts (into $BENCH_ACTIVITIES / $BENCH_ENTRIES, scratch collections); answers 201.
//   POST /one/v1/feeds/:group/:id/activities    the same activity document, one insertOne (into
//        $BENCH_ACTIVITIES_ONE): bench 8's floor, the database's price of one write.
//
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT, BENCH_ACTIVITIES, BENCH_ENTRIES, BENCH_ACTIVITIES_ONE.
// Prints {"ready":true,"url":...}.
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const db = client.db(process.env.FEEDS_NAMESPACE);
const tenant = process.env.BENCH_TENANT;
const entries = db.collection("feed_entries");
const activities = db.collection("activities");
const users = db.collection("users");
const objects = db.collection("objects");
const scratchActivities = db.collection(process.env.BENCH_ACTIVITIES ?? "bench_activities");
const scratchEntries = db.collection(process.env.BENCH_ENTRIES ?? "bench_entries");
const scratchOne = db.collection(process.env.BENCH_ACTIVITIES_ONE ?? "bench_activities_one");

const encodeCursor = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
const decodeCursor = (s) => JSON.parse(Buffer.from(s, "base64url").toString("utf8"));
const custom = (json) => {
  try {
    return JSON.parse(json || "{}");
  } catch {
    return {};
  }
};
const iso = (d) => (d instanceof Date ? d.toISOString() : null);

const app = Fastify({ logger: false });

app.get("/v1/feeds/:group/:id", async (req) => {
  const feed = `${req.params.group}:${req.params.id}`;
  const limit = Math.max(1, Math.min(100, Number(req.query.limit ?? 20) || 20));
  const after = req.query.next ? decodeCursor(req.query.next) : null;
  const filter = after
    ? {
        tenant_id: tenant,
        feed,
        $or: [{ time: { $lt: new Date(after[0]) } }, { time: new Date(after[0]), activity_id: { $lt: after[1] } }],
      }
    : { tenant_id: tenant, feed };
  const rows = await entries.find(filter).sort({ time: -1, activity_id: -1 }).limit(limit + 1).toArray();
  const page = rows.slice(0, limit);
  const ids = page.map((e) => e.activity_id);
  const docs = ids.length ? await activities.find({ _id: { $in: ids }, tenant_id: tenant }).toArray() : [];
  const byId = new Map(docs.map((d) => [d._id, d]));
  const live = ids.map((id) => byId.get(id)).filter((d) => d && !d.deleted_at);
  const userIds = [...new Set(live.filter((a) => a.actor.startsWith("user:")).map((a) => a.actor.slice(5)))];
  const userDocs = userIds.length ? await users.find({ _id: { $in: userIds.map((u) => `${tenant}/${u}`) } }).toArray() : [];
  const usersById = new Map(userDocs.map((u) => [u.id, { id: u.id, custom: custom(u.custom_json) }]));
  const refs = [...new Set(live.flatMap((a) => a.refs ?? []))];
  const objectDocs = refs.length
    ? await objects
        .find({ _id: { $in: refs.map((r) => `${tenant}/${r.slice(0, r.indexOf(":"))}/${r.slice(r.indexOf(":") + 1)}`) } })
        .toArray()
    : [];
  const last = page[page.length - 1];
  return {
    results: live.map((a) => ({
      id: a._id,
      actor: a.actor,
      verb: a.verb,
      object: a.object,
      target: a.target ?? null,
      foreign_id: a.foreign_id ?? null,
      time: iso(a.time),
      custom: custom(a.custom_json),
      origin_feed: a.origin_feed,
      reaction_counts: a.reaction_counts ?? {},
      actor_user: a.actor.startsWith("user:") ? (usersById.get(a.actor.slice(5)) ?? null) : null,
      refs: a.refs ?? [],
      edited_at: iso(a.edited_at),
      version: a.version,
    })),
    next: rows.length > limit && last ? encodeCursor([last.time.getTime(), last.activity_id]) : null,
    objects: Object.fromEntries(
      objectDocs.map((o) => [`${o.type}:${o.id}`, { type: o.type, id: o.id, custom: custom(o.custom_json), updated_at: iso(o.updated_at) }]),
    ),
  };
});

const activityDoc = (req) => {
  const origin = `${req.params.group}:${req.params.id}`;
  const b = req.body ?? {};
  const now = new Date();
  return {
    _id: randomUUID(),
    tenant_id: tenant,
    actor: b.actor,
    verb: b.verb,
    object: b.object,
    target: b.target ?? null,
    foreign_id: b.foreign_id ?? null,
    time: now,
    custom_json: JSON.stringify(b.custom ?? {}),
    origin_feed: origin,
    refs: b.refs ?? [],
    reaction_counts: {},
    version: 1,
    edited_at: null,
    deleted_at: null,
    created_at: now,
    batch: false,
  };
};

app.post("/one/v1/feeds/:group/:id/activities", async (req, reply) => {
  const doc = activityDoc(req);
  await scratchOne.insertOne(doc);
  reply.code(201);
  return { ...doc, time: iso(doc.time), created_at: iso(doc.created_at) };
});

app.post("/v1/feeds/:group/:id/activities", async (req, reply) => {
  const doc = activityDoc(req);
  const { origin_feed: origin, time: now } = doc;
  await scratchActivities.insertOne(doc);
  await scratchEntries.insertOne({ _id: `${tenant}/${origin}/${doc._id}`, tenant_id: tenant, feed: origin, activity_id: doc._id, time: now, origin });
  reply.code(201);
  return { ...doc, time: iso(now), created_at: iso(now) };
});

await serveBare(app, client);
