// The floor of bench 9: a bare Fastify route doing what a reaction is at least, one insertOne of
// the reaction document (the engagement service's shape and `_id`) into a scratch collection with
// the reactions collection's indexes, then one `$inc` of the activity's count of the kind and its
// version (findOneAndUpdate answering the document after, as the feed service's update does) in a
// scratch collection of activities. No auth, no once-only condition, no cache, no event, no RPC.
// Driver options of bare-fastify.mjs. Own process.
//
// With BENCH_NOTIFY set it is the bench's ceiling instead (info): the same two writes, then the
// plain writes of the notification the contract makes of a reaction (its author is told), inline
// and awaited: the notification's insertOne, the `$inc` upsert of the owner's unseen/unread, the
// `$inc` upsert of its group (activity, actor, unseen, unread counts). No outbox, no once-only
// condition, no distinct-actor record, no group head, no clears: the least the store must do per
// reaction when the system notifies.
//
//   POST /v1/activities/:id/reactions {kind, user_id}   answers 201 with the document
//
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT, BENCH_REACTIONS (the scratch reactions),
// BENCH_ACTIVITIES (the scratch activities: one document per activity id, made by the bench),
// BENCH_NOTIFY (the scratch notifications, their counts and groups: `<prefix>` names
// `<prefix>_notifications`, `<prefix>_counts`, `<prefix>_groups`; the author is `author`).
// Prints {"ready":true,"url":...}.
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const db = client.db(process.env.FEEDS_NAMESPACE);
const reactions = db.collection(process.env.BENCH_REACTIONS);
const activities = db.collection(process.env.BENCH_ACTIVITIES);
const tenant = process.env.BENCH_TENANT;
const notify = process.env.BENCH_NOTIFY;
const notifications = notify ? db.collection(`${notify}_notifications`) : null;
const counts = notify ? db.collection(`${notify}_counts`) : null;
const groups = notify ? db.collection(`${notify}_groups`) : null;

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
  if (notify) {
    const owner = "author";
    const groupKey = `${tenant}/${owner}/react/${kind}/${req.params.id}/1`;
    await notifications.insertOne({
      _id: randomUUID(),
      tenant_id: tenant,
      owner,
      verb: "react",
      actor: `user:${userId}`,
      object: `activity:${req.params.id}`,
      reaction_kind: kind,
      activity_id: req.params.id,
      created_at: doc.created_at,
      seen_at: null,
      read_at: null,
      group_key: groupKey,
    });
    await counts.updateOne({ _id: `${tenant}/${owner}` }, { $inc: { unseen: 1, unread: 1, v: 1 }, $setOnInsert: { tenant_id: tenant, owner } }, { upsert: true });
    await groups.updateOne(
      { _id: groupKey, tenant_id: tenant },
      { $inc: { activity_count: 1, actor_count: 1, unseen: 1, unread: 1 }, $max: { updated_at: doc.created_at }, $setOnInsert: { owner, verb: "react" } },
      { upsert: true },
    );
  }
  return reply.code(201).send({ id: doc.id, activity_id: doc.activity_id, user_id: userId, kind, created_at: doc.created_at.toISOString() });
});
await serveBare(app, client);
