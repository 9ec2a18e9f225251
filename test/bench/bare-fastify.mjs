// The floor of bench 1: a bare Fastify app with one route doing the same single MongoDB read as
// the full path's GET /v1/users/:id (users.findOne by `${tenant}/${id}`), with the same driver
// options as @feeds/kit's connectMongo. No auth, no rate limit, no RPC. Own process.
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT. Prints {"ready":true,"url":...}.
import Fastify from "fastify";
import { bareMongo, serveBare } from "./lib.mjs";

const client = await bareMongo();
const users = client.db(process.env.FEEDS_NAMESPACE).collection("users");
const tenant = process.env.BENCH_TENANT;

const app = Fastify({ logger: false });
app.get("/v1/users/:id", async (req, reply) => {
  const doc = await users.findOne({ _id: `${tenant}/${req.params.id}` });
  if (!doc) return reply.code(404).send({ error: { code: "NOT_FOUND" } });
  return doc;
});
await serveBare(app, client);
