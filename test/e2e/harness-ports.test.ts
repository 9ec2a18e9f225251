import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort } from "../../scripts/infra.mjs";

// The harness's ports for child processes (scripts/infra.mjs freePort): taken from below the
// OS's ephemeral range (32768-60999 here), where no outgoing connection takes its local port, and
// never the same twice, so a child that listens a moment later finds its port free.

describe("the test harness's ports", () => {
  it("200 ports are distinct, below the ephemeral range, and each can be listened on", async () => {
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(200);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(15000);
      expect(p).toBeLessThan(32000);
    }
    const listened = await Promise.all(
      ports.slice(0, 20).map(
        (p) =>
          new Promise<boolean>((resolve) => {
            const srv = createServer();
            srv.once("error", () => resolve(false));
            srv.listen(p, "127.0.0.1", () => srv.close(() => resolve(true)));
          }),
      ),
    );
    expect(listened.every(Boolean)).toBe(true);
  });
});
