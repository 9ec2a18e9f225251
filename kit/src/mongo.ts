import { MongoClient, type Db } from "mongodb";
import type { Config } from "./config.js";
import { currentWork, type Metrics } from "./metrics.js";

export interface Mongo {
  client: MongoClient;
  db: Db;
  close(): Promise<void>;
}

/** One client per process; the namespace names the database. Fails fast while the server is down. */
export async function connectMongo(
  config: Pick<Config, "MONGO_URL" | "FEEDS_NAMESPACE" | "MONGO_POOL_SIZE">,
  metrics?: Metrics,
): Promise<Mongo> {
  const client = new MongoClient(config.MONGO_URL, {
    serverSelectionTimeoutMS: 2000,
    connectTimeoutMS: 2000,
    maxPoolSize: config.MONGO_POOL_SIZE,
    // Counted by command name: the figure "database commands per request" is read from it.
    monitorCommands: metrics !== undefined,
  });
  if (metrics) {
    client.on("commandStarted", (e) => metrics.mongoCommands.inc({ command: e.commandName, work: currentWork() }));
    // The driver's own names (find, update, hello, ...): a bounded set, whatever a client sends.
    client.on("commandSucceeded", (e) => metrics.mongoCommandDuration.observe({ command: e.commandName, outcome: "ok" }, e.duration / 1000));
    client.on("commandFailed", (e) => metrics.mongoCommandDuration.observe({ command: e.commandName, outcome: "failed" }, e.duration / 1000));
  }
  await client.connect();
  return { client, db: client.db(config.FEEDS_NAMESPACE), close: () => client.close() };
}
