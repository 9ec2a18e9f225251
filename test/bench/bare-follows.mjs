// The floor of bench 14: a bare Fastify route doing what a follow's write is at least, the edge
// insert (the graph service's edge document and `_id`, into a scratch collection with the edges'
// indexes) and two `$inc`s, the follower's `following_count` and the followed feed's
// `follower_count` (upserts on a scratch count collection). No auth, no once-filter, no outbox,
// no event, no RPC. Driver options of bare-fastify.mjs. Own process.
//
// With BENCH_NOTIFY set it is the bench's ceiling instead (info): the same writes, then the plain
// writes of the notification the contract makes of a follow of a `user:` feed (its user is told;
// bare-notify.mjs).
//
//   POST /v1/feeds/:group/:id/follows {target}   answers 201 with the Follow
//
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT, BENCH_EDGES, BENCH_COUNTS (the scratch collections),
// BENCH_NOTIFY (the prefix of the scratch notification collections).
// Prints {"ready":true,"url":...}.
import Fastify from "fastify";
import { notifyWrites } from "./bare-notify.mjs";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const db = client.db(process.env.FEEDS_NAMESPACE);
const edges = db.collection(process.env.BENCH_EDGES);
const counts = db.collection(process.env.BENCH_COUNTS);
const tenant = process.env.BENCH_TENANT;
const notify = process.env.BENCH_NOTIFY ? notifyWrites(db, process.env.BENCH_NOTIFY, tenant) : null;

const inc = (feed, field) =>
  counts.updateOne({ _id: `${tenant}/${feed}` }, { $inc: { [field]: 1 }, $setOnInsert: { tenant_id: tenant, feed, group: feed.split(":")[0] } }, { upsert: true });

const app = Fastify({ logger: false });
app.post("/v1/feeds/:group/:id/follows", async (req, reply) => {
  const source = `${req.params.group}:${req.params.id}`;
  const { target } = req.body;
  const doc = { _id: `${tenant}/${source}/${target}`, tenant_id: tenant, source_feed: source, target_feed: target, created_at: new Date() };
  await edges.insertOne(doc);
  await Promise.all([inc(source, "following_count"), inc(target, "follower_count")]);
  const [tg, tid] = target.split(":");
  if (tg === "user") await notify?.({ owner: tid, verb: "follow", actor: `user:${req.params.id}`, object: `feed:${target}`, at: doc.created_at, base: `follow/${target}` });
  return reply.code(201).send({ source_group: req.params.group, source_id: req.params.id, target_group: tg, target_id: tid, created_at: doc.created_at.toISOString() });
});
await serveBare(app, client);
