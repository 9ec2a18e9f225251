import { randomBytes } from "node:crypto";
import type { Transport } from "@connectrpc/connect";
import {
  createClients,
  createInProcessTransport,
  createInternalAuth,
  createNetworkTransport,
  requireInternalKey,
  serviceNames,
  serviceUrl,
  type Clients,
  type Config,
  type Infra,
  type InternalAuth,
  type ServiceBuild,
  type ServiceModule,
  type ServiceName,
} from "@feeds/kit";
import { buildTenancy } from "@feeds/tenancy";
import { buildIdentity } from "@feeds/identity";
import { buildFeed } from "@feeds/feed";
import { buildGraph } from "@feeds/graph";
import { buildEngagement } from "@feeds/engagement";
import { buildNotification } from "@feeds/notification";
import { buildCatalog } from "@feeds/catalog";

const builds: Record<ServiceName, ServiceBuild> = {
  tenancy: buildTenancy,
  identity: buildIdentity,
  feed: buildFeed,
  graph: buildGraph,
  engagement: buildEngagement,
  notification: buildNotification,
  catalog: buildCatalog,
};

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
 * Every service, for the gateway and for each other: built in this process and reached through the
 * in-process transport (the default), or over gRPC at the base URL a `<SERVICE>_URL` names.
 * Mixed is allowed. `modules` are the services built here, for the caller to start and stop.
 */
export async function composeServices(infra: Infra): Promise<{ clients: Clients; modules: ServiceModule[] }> {
  const connected: { clients?: Clients } = {};
  const peers = () => {
    if (!connected.clients) throw new Error("services are not connected yet");
    return connected.clients;
  };
  const auth = internalAuthOf(infra.config);
  const local = serviceNames.filter((n) => !serviceUrl(infra.config, n));
  const modules = await Promise.all(local.map((n) => builds[n]({ ...infra, log: infra.log.child({ svc: n }) }, peers)));
  const inProcess = modules.length ? createInProcessTransport(modules, infra.log, auth, infra.config.IN_PROCESS_RPC) : null;
  const transports = new Map<ServiceName, Transport>();
  for (const n of serviceNames) {
    const url = serviceUrl(infra.config, n);
    transports.set(n, url ? createNetworkTransport(url, auth) : (inProcess as Transport));
  }
  connected.clients = createClients((n) => transports.get(n) as Transport);
  return { modules, clients: connected.clients };
}
