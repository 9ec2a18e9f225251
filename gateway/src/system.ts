import type { Client, Transport } from "@connectrpc/connect";
import {
  clientOf,
  createInProcessTransport,
  createNetworkTransport,
  serviceNames,
  serviceUrl,
  type Infra,
  type ServiceModule,
  type ServiceName,
} from "@feeds/kit";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { Health } from "@feeds/proto/grpc/health/v1/health";
import { createTenancyModule } from "@feeds/tenancy";
import { createIdentityModule } from "@feeds/identity";
import { createFeedModule } from "@feeds/feed";
import { createGraphModule } from "@feeds/graph";
import { createEngagementModule } from "@feeds/engagement";
import { createNotificationModule } from "@feeds/notification";
import { createCatalogModule } from "@feeds/catalog";

export interface Clients {
  tenancy: Client<typeof TenancyService>;
  users: Client<typeof UserService>;
  operators: Client<typeof OperatorService>;
  /** gRPC health of each service, for readiness. */
  health: Record<ServiceName, Client<typeof Health>>;
}

/** Builds one service's module from the shared infrastructure (one-process mode). */
async function buildModule(name: ServiceName, infra: Infra): Promise<ServiceModule> {
  const { config, log } = infra;
  switch (name) {
    case "tenancy":
      return createTenancyModule({
        db: (await infra.mongo()).db,
        redis: await infra.redis(),
        masterKey: Buffer.from(config.FEEDS_MASTER_KEY, "base64"),
        log: log.child({ svc: "tenancy" }),
      });
    case "identity":
      return createIdentityModule({
        db: (await infra.mongo()).db,
        redis: await infra.redis(),
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
        log: log.child({ svc: "identity" }),
      });
    case "feed":
      return createFeedModule({ nats: await infra.nats() });
    case "graph":
      return createGraphModule();
    case "engagement":
      return createEngagementModule();
    case "notification":
      return createNotificationModule({ nats: await infra.nats() });
    case "catalog":
      return createCatalogModule();
  }
}

/**
 * Connects the gateway to the seven services: in this process (the default), or over gRPC to
 * the base URLs named by `<SERVICE>_URL` (split mode). Mixed is allowed.
 */
export async function connectServices(
  infra: Infra,
): Promise<{ clients: Clients; modules: ServiceModule[] }> {
  const local = serviceNames.filter((n) => !serviceUrl(infra.config, n));
  const modules = await Promise.all(local.map((n) => buildModule(n, infra)));
  const inProcess = modules.length ? createInProcessTransport(modules, infra.log) : null;
  const transports = new Map<ServiceName, Transport>();
  for (const n of serviceNames) {
    const url = serviceUrl(infra.config, n);
    transports.set(n, url ? createNetworkTransport(url) : (inProcess as Transport));
  }
  const t = (n: ServiceName) => transports.get(n) as Transport;
  const health = Object.fromEntries(serviceNames.map((n) => [n, clientOf(Health, t(n))])) as Clients["health"];
  return {
    modules,
    clients: {
      tenancy: clientOf(TenancyService, t("tenancy")),
      users: clientOf(UserService, t("identity")),
      operators: clientOf(OperatorService, t("identity")),
      health,
    },
  };
}
