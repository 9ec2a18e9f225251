import { randomBytes } from "node:crypto";
import type { Transport } from "@connectrpc/connect";
import {
  createClients,
  createInProcessTransport,
  createInternalAuth,
  createNetworkTransport,
  requireInternalKey,
  rootKeys,
  serviceNames,
  serviceUrl,
  type Clients,
  type Config,
  type Infra,
  type InternalAuth,
  type ServiceBuild,
  type ServiceModule,
  type ServiceName,
  type Signer,
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
 * The keys of this process's service calls: it signs as the gateway and as each service it runs,
 * so it holds the root. Once any service is reached over the network FEEDS_INTERNAL_KEY is
 * required; with every service in this process, nothing outside it verifies a token, so a root of
 * its own does (when none is configured).
 */
function internalAuthOf(config: Config): InternalAuth {
  const remote = serviceNames.some((n) => serviceUrl(config, n));
  if (remote || config.FEEDS_INTERNAL_KEY) return createInternalAuth(rootKeys(requireInternalKey(config)));
  return createInternalAuth(rootKeys(randomBytes(32)));
}

/**
 * Every service, for the gateway and for each other: built in this process and reached through the
 * in-process transport (the default), or over gRPC at the base URL a `<SERVICE>_URL` names.
 * Mixed is allowed. The gateway's clients sign as `gateway`, each service's peers as that
 * service, so the allow-list holds here as between processes. `modules` are the services built
 * here, for the caller to start and stop.
 */
export async function composeServices(infra: Infra): Promise<{ clients: Clients; modules: ServiceModule[] }> {
  const auth = internalAuthOf(infra.config);
  const local = serviceNames.filter((n) => !serviceUrl(infra.config, n));
  const built: { modules?: ServiceModule[] } = {};
  const inProcess = new Map<Signer, Transport>();
  const transportOf = (signer: Signer, n: ServiceName): Transport => {
    const url = serviceUrl(infra.config, n);
    if (url) return createNetworkTransport(url, auth, signer);
    if (!built.modules) throw new Error("services are not connected yet");
    let t = inProcess.get(signer);
    if (!t) inProcess.set(signer, (t = createInProcessTransport(built.modules, infra.log, auth, signer, infra.config.IN_PROCESS_RPC)));
    return t;
  };
  const clientsOf = new Map<Signer, Clients>();
  const clients = (signer: Signer): Clients => {
    let c = clientsOf.get(signer);
    if (!c) clientsOf.set(signer, (c = createClients((n) => transportOf(signer, n))));
    return c;
  };
  built.modules = await Promise.all(local.map((n) => builds[n]({ ...infra, log: infra.log.child({ svc: n }) }, () => clients(n))));
  return { modules: built.modules, clients: clients("gateway") };
}
