import { describe, expect, it } from "vitest";
import { http, newTenant } from "../support/api.js";

// Concurrent posts of one (foreign_id, time) identity with different bodies, through the gateway:
// the first writer's body wins, both callers answer it (201), and its origin feed shows it.

const PAIRS = 40;

/** The fields a caller chose: what tells one body from the other. */
const bodyOf = (a: any) => ({ id: a.id, actor: a.actor, verb: a.verb, object: a.object, custom: a.custom, origin_feed: a.origin_feed });

describe("dedupe race", () => {
  it(`answers the first writer's body to both callers of ${PAIRS} racing pairs, and its origin feed shows it`, async () => {
    const t = await newTenant();
    const token = await t.server();
    const post = (i: number, side: "left" | "right") =>
      http("POST", `/v1/feeds/user/${side}-${i}/activities`, {
        token,
        body: {
          actor: `system:${side}`,
          verb: side === "left" ? "post" : "share",
          object: `object-${side}-${i}`,
          foreign_id: `race-${i}`,
          time: new Date(Date.UTC(2024, 4, 6, 7, 8, i)).toISOString(),
          custom: { side, i },
        },
      });
    const pairs = await Promise.all(Array.from({ length: PAIRS }, (_, i) => Promise.all([post(i, "left"), post(i, "right")])));

    for (const [i, [left, right]] of pairs.entries()) {
      expect([left.status, right.status], JSON.stringify([left.body, right.body])).toEqual([201, 201]);
      const winner = bodyOf(left.body);
      expect(bodyOf(right.body)).toEqual(winner);
      const side = winner.custom.side as string;
      expect(["left", "right"]).toContain(side);
      expect(winner).toEqual({
        id: winner.id,
        actor: `system:${side}`,
        verb: side === "left" ? "post" : "share",
        object: `object-${side}-${i}`,
        custom: { side, i },
        origin_feed: `user:${side}-${i}`,
      });
      const stored = await http("GET", `/v1/activities/${winner.id}`, { token });
      expect(stored.status).toBe(200);
      expect(bodyOf(stored.body)).toEqual(winner);
      const origin = await http("GET", `/v1/feeds/user/${side}-${i}`, { token });
      expect(origin.body.results.map(bodyOf)).toEqual([winner]);
      const other = await http("GET", `/v1/feeds/user/${side === "left" ? "right" : "left"}-${i}`, { token });
      expect(other.body.results).toEqual([]);
    }
  });
});
