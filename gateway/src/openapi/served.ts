import type { FastifyInstance } from "fastify";

/** The base URL the gateway listens on, as the served document's server (any-address hosts as localhost). */
export function baseUrlOf(app: FastifyInstance, host: string): string {
  const address = app.server.address();
  const port = address !== null && typeof address === "object" ? address.port : 0;
  const name = host === "0.0.0.0" || host === "::" || host === "" ? "localhost" : host.includes(":") ? `[${host}]` : host;
  return `http://${name}:${port}`;
}
