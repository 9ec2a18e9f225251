import type { Db } from "mongodb";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@feeds/kit";
import type { PromotedService } from "@feeds/proto/feeds/feed/v1/feed";

/** Promoted activities. */
export async function createPromotedModule(_deps: { db: Db; log: Logger }): Promise<Partial<ServiceImpl<typeof PromotedService>>> {
  return {};
}
