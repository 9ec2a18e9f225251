import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ImportItemSchema, type ImportItem } from "@feeds/proto/feeds/feed/v1/feed";
import { batchActivityItem, operations } from "@feeds/contract";
import type { RouteTable } from "../define.js";
import { runBatch } from "../batch.js";
import type { Clients } from "@feeds/kit";

/** Item JSON → the service's import item; null when the item's shape is wrong. */
function toImportItem(raw: unknown): ImportItem | null {
  const r = batchActivityItem.safeParse(raw);
  if (!r.success) return null;
  const { feed, activity: a } = r.data;
  const i = feed.indexOf(":");
  return create(ImportItemSchema, {
    feed: { group: feed.slice(0, i), id: feed.slice(i + 1) },
    activity: {
      actor: a.actor,
      verb: a.verb,
      object: a.object,
      ...(a.target !== undefined ? { target: a.target } : {}),
      ...(a.foreign_id !== undefined ? { foreignId: a.foreign_id } : {}),
      ...(a.time !== undefined ? { time: timestampFromDate(new Date(a.time)) } : {}),
      customJson: JSON.stringify(a.custom),
      refs: a.refs,
    },
  });
}

/** POST /v1/batch/activities: cold-start import; fan-out runs, no live head keys, time unclamped. */
export function batchActivityRoutes(r: RouteTable, clients: Pick<Clients, "feed">) {
  r.handle(operations.batchActivities, {
    batch: true,
    async handler({ body, call }) {
      return runBatch(body.activities, toImportItem, async (items) => (await clients.feed.importActivities({ items }, call)).results, {
        withId: true,
      });
    },
  });
}
