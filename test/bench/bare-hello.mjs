// The reference of bench 12: a bare Fastify app answering GET /hello with {hello: "world"}, what
// an HTTP server on this machine does at most. Own process. Prints {"ready":true,"url":...}.
import Fastify from "fastify";
import { serveBare } from "./lib.mjs";

const app = Fastify({ logger: false });
app.get("/hello", async () => ({ hello: "world" }));
await serveBare(app, { close: async () => undefined });
