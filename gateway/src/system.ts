import { randomBytes } from "node:crypto";
import type { Transport } from "@connectrpc/connect";
import {
  createClients,
  createInProcessTransport,
  createInternalAuth,
  createNetworkTransport,
  requireInternalKey,
  requireMasterKey,
  serviceNames,
  serviceUrl,
  type Clients,
  type Config,
  type Infra,
  type InternalAuth,
  type ServiceModule,
  type ServiceName,
} from "@feeds/kit";
import { createTenancyModule } from "@feeds/tenancy";
import { createIdentityModule } from "@feeds/identity";
import { createFeedModule } from "@feeds/feed";
import { createGraphModule } from "@feeds/graph";
import { createEngagementModule } from "@feeds/engagement";
import { createNotificationModule, webhookOptionsOf } from "@feeds/notification";
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
        masterKey: requireMasterKey(config),
        log: child,
      });
    case "identity":
      return createIdentityModule({
        db: (await infra.mongo()).db,
        redis: await infra.redis(),
        nats: await infra.nats(),
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
        log: child,
      });
    case "feed":
      return createFeedModule({ db: (await infra.mongo()).db, nats: await infra.nats(), redis: await infra.redis(), peers, log: child });
    case "graph":
      return createGraphModule({ db: (await infra.mongo()).db, nats: await infra.nats(), redis: await infra.redis(), peers, log: child });
    case "engagement":
      return createEngagementModule({ db: (await infra.mongo()).db, redis: await infra.redis(), nats: await infra.nats(), peers, log: child });
    case "notification":
      return createNotificationModule({
        db: (await infra.mongo()).db,
        nats: await infra.nats(),
        redis: await infra.redis(),
        peers,
        log: child,
        webhooks: webhookOptionsOf(config),
      });
    case "catalog":
      return createCatalogModule({ db: (await infra.mongo()).db, redis: await infra.redis(), log: child });
  }
}

/**
 * The key of this process's service calls. Once any service is reached over the network the
 * shared FEEDS_INTERNAL_KEY is required; with every service in this process, nothing outside it
 * verifies a token, so a key of its own does (when none is configured).
 */
function internalAuthOf(config: Config): InternalAuth {
  const remote = serviceNames.some((n) => serviceUrl(config, n));
  if (remote || config.FEEDS_INTERNAL_KEY) return createInternalAuth(requireInternalKey(config));
  return createInternalAuth(randomBytes(32));
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
  const auth = internalAuthOf(infra.config);
  const local = serviceNames.filter((n) => !serviceUrl(infra.config, n));
  const modules = await Promise.all(local.map((n) => buildModule(n, infra, peers)));
  const inProcess = modules.length ? createInProcessTransport(modules, infra.log, auth) : null;
  const transports = new Map<ServiceName, Transport>();
  for (const n of serviceNames) {
    const url = serviceUrl(infra.config, n);
    transports.set(n, url ? createNetworkTransport(url, auth) : (inProcess as Transport));
  }
  connected.clients = createClients((n) => transports.get(n) as Transport);
  return { modules, clients: connected.clients };
}
