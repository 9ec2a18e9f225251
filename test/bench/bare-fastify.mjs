// The floor of bench 1: a bare Fastify app with one route doing the same single MongoDB read as
// the full path's GET /v1/users/:id (users.findOne by `${tenant}/${id}`), with the same driver
// options as @feeds/kit's connectMongo. No auth, no rate limit, no RPC. Own process.
// env: MONGO_URL, FEEDS_NAMESPACE, BENCH_TENANT. Prints {"ready":true,"url":...}.
import Fastify from "fastify";
import { MongoClient } from "mongodb";

const client = new MongoClient(process.env.MONGO_URL, {
  serverSelectionTimeoutMS: 2000,
  connectTimeoutMS: 2000,
  maxPoolSize: 50,
  retryWrites: false,
});
await client.connect();
const users = client.db(process.env.FEEDS_NAMESPACE).collection("users");
const tenant = process.env.BENCH_TENANT;

const app = Fastify({ logger: false });
app.get("/v1/users/:id", async (req, reply) => {
  const doc = await users.findOne({ _id: `${tenant}/${req.params.id}` });
  if (!doc) return reply.code(404).send({ error: { code: "NOT_FOUND" } });
  return doc;
});
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${JSON.stringify({ ready: true, url: address })}\n`);

const stop = async () => {
  await app.close();
  await client.close();
  process.exit(0);
};
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());
