import type { Client, Transport } from "@connectrpc/connect";
import { createClient } from "@connectrpc/connect";
import { TenancyService } from "@feeds/proto/feeds/tenancy/v1/tenancy";
import { OperatorService, UserService } from "@feeds/proto/feeds/identity/v1/identity";
import { FeedService, PromotedService } from "@feeds/proto/feeds/feed/v1/feed";
import { GraphService } from "@feeds/proto/feeds/graph/v1/graph";
import { CatalogService } from "@feeds/proto/feeds/catalog/v1/catalog";
import { EngagementService } from "@feeds/proto/feeds/engagement/v1/engagement";
import { NotificationService } from "@feeds/proto/feeds/notification/v1/notification";
import { WebhookService } from "@feeds/proto/feeds/notification/v1/webhook";
import { Health } from "@feeds/proto/grpc/health/v1/health";
import { serviceNames, serviceUrl, serviceUrlVariable, type Config, type ServiceName, type Signer } from "./config.js";
import { createInternalAuth, type InternalAuth } from "./internal-auth.js";
import { createNetworkTransport } from "./rpc.js";
import { keysFromConfig } from "./service-keys.js";

/** A client of every service, each over the transport that reaches it. */
export interface Clients {
  tenancy: Client<typeof TenancyService>;
  users: Client<typeof UserService>;
  operators: Client<typeof OperatorService>;
  feed: Client<typeof FeedService>;
  promoted: Client<typeof PromotedService>;
  graph: Client<typeof GraphService>;
  catalog: Client<typeof CatalogService>;
  engagement: Client<typeof EngagementService>;
  notification: Client<typeof NotificationService>;
  webhooks: Client<typeof WebhookService>;
  /** gRPC health of each service, for readiness. */
  health: Record<ServiceName, Client<typeof Health>>;
}

export function createClients(transportOf: (name: ServiceName) => Transport): Clients {
  const health = Object.fromEntries(serviceNames.map((n) => [n, createClient(Health, transportOf(n))])) as Clients["health"];
  return {
    tenancy: createClient(TenancyService, transportOf("tenancy")),
    users: createClient(UserService, transportOf("identity")),
    operators: createClient(OperatorService, transportOf("identity")),
    feed: createClient(FeedService, transportOf("feed")),
    promoted: createClient(PromotedService, transportOf("feed")),
    graph: createClient(GraphService, transportOf("graph")),
    catalog: createClient(CatalogService, transportOf("catalog")),
    engagement: createClient(EngagementService, transportOf("engagement")),
    notification: createClient(NotificationService, transportOf("notification")),
    webhooks: createClient(WebhookService, transportOf("notification")),
    health,
  };
}

/**
 * Clients a standalone service process uses to reach its peers, over gRPC at `<SERVICE>_URL`,
 * signing as `signer`. Created lazily: a service that never calls a peer needs no URL for it.
 */
export function createPeerClients(config: Config, auth: InternalAuth, signer: Signer): () => Clients {
  let clients: Clients | undefined;
  return () =>
    (clients ??= createClients((name) => {
      const url = serviceUrl(config, name);
      if (!url) throw new Error(`${serviceUrlVariable(name)} is not set: this process cannot reach the ${name} service`);
      return createNetworkTransport(url, auth, signer);
    }));
}

/**
 * Clients of every service over gRPC, for a process that runs none of them (the gateway on its
 * own), one transport per service, signing as the gateway. Every `<SERVICE>_URL` and the
 * gateway's key are required at once: a missing one stops the process at start-up naming the
 * variable (and `why`), not its first request.
 */
export function createNetworkClients(config: Config, why: string): Clients {
  const missing = serviceNames.filter((n) => !serviceUrl(config, n));
  if (missing.length) {
    const lines = missing.map((n) => `  ${serviceUrlVariable(n)}: required: the base URL of the ${n} service (${why})`);
    throw new Error(`invalid configuration:\n${lines.join("\n")}`);
  }
  const auth = createInternalAuth(keysFromConfig(config, "gateway"));
  const transports = new Map(serviceNames.map((n) => [n, createNetworkTransport(serviceUrl(config, n) as string, auth, "gateway")]));
  return createClients((n) => transports.get(n) as Transport);
}
