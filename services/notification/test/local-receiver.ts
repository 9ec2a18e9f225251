import { createServer, type RequestListener } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface LocalReceiver {
  port: number;
  /** Ends every connection, answered or not (a receiver that never answers included). */
  close(): void;
}

/** An HTTP receiver on a free loopback port, for the delivery worker's tests. */
export async function startLocalReceiver(handler: RequestListener): Promise<LocalReceiver> {
  const server = createServer(handler);
  const sockets = new Set<Socket>();
  server.on("connection", (s) => (sockets.add(s), s.on("close", () => sockets.delete(s))));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
