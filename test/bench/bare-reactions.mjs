// The floor of bench 9: a bare Fastify route doing what a reaction is at least, one insertOne of
// the reaction document (the engagement service's shape and `_id`) into a scratch collection with
// the reactions collection's indexes, then one `$inc` of the activity's count of the kind and its
// version (findOneAndUpdate answering the document after, as the feed service's update does) in a
// scratch collection of activities. No auth, no once-only condition, no cache, no event, no RPC.
// Driver options of bare-fastify.mjs. Own process.
//
// With BENCH_NOTIFY set it is the bench's ceiling instead (info): the same two writes, then the
// plain writes of the notification the contract makes of a reaction (its author, `author`, is
// told; bare-notify.mjs).
//
//   POST /v1/activities/:id/reactions {kind, user_id}   answers 201 with the document
//
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT, BENCH_REACTIONS (the scratch reactions),
// BENCH_ACTIVITIES (the scratch activities: one document per activity id, made by the bench),
// BENCH_NOTIFY (the prefix of the scratch notification collections).
// Prints {"ready":true,"url":...}.
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { notifyWrites } from "./bare-notify.mjs";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const db = client.db(process.env.FEEDS_NAMESPACE);
const reactions = db.collection(process.env.BENCH_REACTIONS);
const activities = db.collection(process.env.BENCH_ACTIVITIES);
const tenant = process.env.BENCH_TENANT;
const notify = process.env.BENCH_NOTIFY ? notifyWrites(db, process.env.BENCH_NOTIFY, tenant) : null;

const app = Fastify({ logger: false });
app.post("/v1/activities/:id/reactions", async (req, reply) => {
  const { kind, user_id: userId } = req.body;
  const doc = {
    _id: `${tenant}/${req.params.id}/${userId}/${kind}`,
    id: randomUUID(),
    tenant_id: tenant,
    activity_id: req.params.id,
    user_id: userId,
    kind,
    created_at: new Date(),
  };
  await reactions.insertOne(doc);
  await activities.findOneAndUpdate(
    { _id: req.params.id, tenant_id: tenant },
    { $inc: { [`reaction_counts.${kind}`]: 1, version: 1 } },
    { returnDocument: "after" },
  );
  await notify?.({
    owner: "author",
    verb: "react",
    actor: `user:${userId}`,
    object: `activity:${req.params.id}`,
    reactionKind: kind,
    activityId: req.params.id,
    at: doc.created_at,
    base: `react/${kind}/${req.params.id}`,
  });
  return reply.code(201).send({ id: doc.id, activity_id: doc.activity_id, user_id: userId, kind, created_at: doc.created_at.toISOString() });
});
await serveBare(app, client);
