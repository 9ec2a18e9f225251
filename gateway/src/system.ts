import type { Transport } from "@connectrpc/connect";
import {
  createClients,
  createInProcessTransport,
  createNetworkTransport,
  serviceNames,
  serviceUrl,
  type Clients,
  type Infra,
  type ServiceModule,
  type ServiceName,
} from "@feeds/kit";
import { createTenancyModule } from "@feeds/tenancy";
import { createIdentityModule } from "@feeds/identity";
import { createFeedModule } from "@feeds/feed";
import { createGraphModule } from "@feeds/graph";
import { createEngagementModule } from "@feeds/engagement";
import { createNotificationModule } from "@feeds/notification";
import { createCatalogModule } from "@feeds/catalog";

export type { Clients };

/** Builds one service's module from the shared infrastructure (one-process mode). `peers`
 * reaches the other services once the transports exist. */
async function buildModule(name: ServiceName, infra: Infra, peers: () => Clients): Promise<ServiceModule> {
  const { config, log } = infra;
  const child = log.child({ svc: name });
  switch (name) {
    case "tenancy":
      return createTenancyModule({
        db: (await infra.mongo()).db,
        redis: await infra.redis(),
        masterKey: Buffer.from(config.FEEDS_MASTER_KEY, "base64"),
        log: child,
      });
    case "identity":
      return createIdentityModule({
        db: (await infra.mongo()).db,
        redis: await infra.redis(),
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
        log: child,
      });
    case "feed":
      return createFeedModule({ db: (await infra.mongo()).db, nats: await infra.nats(), redis: await infra.redis(), peers, log: child });
    case "graph":
      return createGraphModule({ db: (await infra.mongo()).db, log: child });
    case "engagement":
      return createEngagementModule({ db: (await infra.mongo()).db });
    case "notification":
      return createNotificationModule({ nats: await infra.nats() });
    case "catalog":
      return createCatalogModule({ db: (await infra.mongo()).db, redis: await infra.redis(), log: child });
  }
}

/**
 * Connects the gateway to the seven services: in this process (the default), or over gRPC to
 * the base URLs named by `<SERVICE>_URL` (split mode). Mixed is allowed.
 */
export async function connectServices(infra: Infra): Promise<{ clients: Clients; modules: ServiceModule[] }> {
  const connected: { clients?: Clients } = {};
  const peers = () => {
    if (!connected.clients) throw new Error("services are not connected yet");
    return connected.clients;
  };
  const local = serviceNames.filter((n) => !serviceUrl(infra.config, n));
  const modules = await Promise.all(local.map((n) => buildModule(n, infra, peers)));
  const inProcess = modules.length ? createInProcessTransport(modules, infra.log) : null;
  const transports = new Map<ServiceName, Transport>();
  for (const n of serviceNames) {
    const url = serviceUrl(infra.config, n);
    transports.set(n, url ? createNetworkTransport(url) : (inProcess as Transport));
  }
  connected.clients = createClients((n) => transports.get(n) as Transport);
  return { modules, clients: connected.clients };
}
