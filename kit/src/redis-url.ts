// REDIS_URL names one Redis (`redis://`, `rediss://` for TLS, as ioredis reads them) or a Redis
// Cluster by some of its nodes: `redis+cluster://[user:password@]host1[:port],host2[:port],...`
// (`rediss+cluster://` for TLS; port 6379 when left out). The client asks those nodes for the
// rest of the cluster (docs/redis.md).

export interface ClusterNode {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: "single"; url: string }
  | { kind: "cluster"; nodes: ClusterNode[]; auth: { username?: string; password?: string }; tls: boolean };

const SINGLE = /^rediss?:\/\//;
const CLUSTER = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;
const NODE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+))(?::(\d{1,5}))?$/;

/** What REDIS_URL names, or what is wrong with it. */
export function parseRedisUrl(url: string): RedisTarget | { error: string } {
  if (SINGLE.test(url)) return { kind: "single", url };
  const m = CLUSTER.exec(url);
  if (!m) return { error: "must start with redis://, rediss://, redis+cluster:// or rediss+cluster:// (and a cluster URL names host[:port] nodes, comma-separated)" };
  const [, scheme, userinfo, hosts = ""] = m;
  const nodes: ClusterNode[] = [];
  for (const part of hosts.split(",")) {
    const n = NODE.exec(part.trim());
    const port = Number(n?.[3] ?? 6379);
    if (!n || port < 1 || port > 65535) return { error: `"${part.slice(0, 60)}" is not host[:port]` };
    nodes.push({ host: n[1] ?? n[2] ?? "", port });
  }
  const auth: { username?: string; password?: string } = {};
  if (userinfo) {
    const colon = userinfo.indexOf(":");
    try {
      const user = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
      if (user) auth.username = user;
      if (colon >= 0) auth.password = decodeURIComponent(userinfo.slice(colon + 1));
    } catch {
      return { error: "the user or password is not percent-encoded" };
    }
  }
  return { kind: "cluster", nodes, auth, tls: scheme === "rediss" };
}
