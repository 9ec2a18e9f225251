import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { namedSigners, serviceKeySet, type Signer } from "@feeds/kit";
import { services, workers } from "../../scripts/lib/system.mjs";
import { buildK8sTools } from "../../scripts/k8s-check/tools.mjs";

// deploy/helm/feeds rendered by a pinned helm (built from the Go module proxy into .cache/) for the
// default values, values-production.yaml and the monolith profile: `helm lint --strict`, then every object
// strict-decoded offline into the Kubernetes API's Go types (scripts/k8s-check), then the shape
// the platform needs. docker-compose.yml loads (compose-go: schema, interpolation, merges) and
// names every process the chart runs.

const root = new URL("../..", import.meta.url).pathname;
const chart = join(root, "deploy/helm/feeds");
const release = "feeds";
let tools: { helm: string; k8sCheck: string };

function run(cmd: string, args: string[], input?: string, env: Record<string, string> = {}) {
  const r = spawnSync(cmd, args, { cwd: root, input, encoding: "utf8", maxBuffer: 64 << 20, env: { ...process.env, ...env } });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template` of the chart with the given values files, checked; the objects as JSON. */
function render(valuesFiles: string[]): any[] {
  const args = ["template", release, chart, "--namespace", "feeds", ...valuesFiles.flatMap((f) => ["-f", join(chart, f)])];
  const rendered = run(tools.helm, args);
  expect(rendered.stderr).toBe("");
  expect(rendered.status).toBe(0);
  const checked = run(tools.k8sCheck, ["-json"], rendered.stdout);
  expect(checked.stderr).toMatch(/^k8s-check: \d+ objects ok/);
  expect(checked.status).toBe(0);
  return JSON.parse(checked.stdout) as any[];
}

/** A label selector (matchLabels and In/NotIn/Exists expressions) against a label set. */
function matches(selector: any, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = e.key in labels;
    if (e.operator === "In" && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === "NotIn" && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

/** Whether a NetworkPolicy lets a pod with `labels` (in the release's namespace) reach `port` (a name). */
function admits(policy: any, labels: Record<string, string>, port: string): boolean {
  return (policy.spec.ingress ?? []).some(
    (rule: any) =>
      (rule.ports ?? [{ port }]).some((p: any) => p.port === port) &&
      (rule.from === undefined || rule.from.some((peer: any) => peer.podSelector && !peer.namespaceSelector && matches(peer.podSelector, labels))),
  );
}

const variants = [
  { name: "default values", files: [] as string[], monitoring: false, natsReplicas: "1" },
  { name: "values-production.yaml", files: ["values-production.yaml"], monitoring: true, natsReplicas: "3" },
];

describe("the Helm chart", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    // `npm test` builds them in the background and runs this file last; alone, a cold build takes minutes.
    tools = await buildK8sTools({ log: (m) => process.stderr.write(`[k8s-check] ${m}\n`) });
  }, 30 * 60_000);

  for (const v of variants) {
    describe(v.name, () => {
      let objects: any[] = [];
      const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
      const named = (kind: string, name: string) => ofKind(kind).find((o) => o.metadata.name === name);
      const deployment = (component: string) => named("Deployment", `${release}-${component}`);
      const workerComponents = Object.keys(workers).map((w) => `${w}-worker`);

      beforeAll(() => {
        const lint = run(tools.helm, ["lint", "--strict", chart, ...v.files.flatMap((f) => ["-f", join(chart, f)])]);
        expect(lint.stdout + lint.stderr).toContain("1 chart(s) linted, 0 chart(s) failed");
        expect(lint.status).toBe(0);
        objects = render(v.files);
      });

      it("runs the gateway, each service and each worker as a Deployment of its own", () => {
        const names = ofKind("Deployment").map((d) => d.metadata.name).sort();
        expect(names).toEqual(["gateway", ...services, ...workerComponents].map((c) => `${release}-${c}`).sort());
        for (const s of services) {
          const c = deployment(s).spec.template.spec.containers[0];
          expect(c.command).toEqual(["node", "--import", "@feeds/kit/otel", `services/${s}/dist/main.js`]);
          const role = Object.values(workers).includes(s) ? "api" : "all";
          expect(c.env, s).toContainEqual({ name: "FEEDS_ROLE", value: role });
        }
        for (const [w, s] of Object.entries(workers)) {
          const c = deployment(`${w}-worker`).spec.template.spec.containers[0];
          expect(c.command).toEqual(["node", "--import", "@feeds/kit/otel", `services/${s}/dist/main.js`]);
          expect(c.env).toContainEqual({ name: "FEEDS_ROLE", value: "worker" });
        }
        // Every process reaches every service at its Service's name.
        for (const d of ofKind("Deployment")) {
          const env = d.spec.template.spec.containers[0].env;
          for (const s of services) expect(env, d.metadata.name).toContainEqual({ name: `${s.toUpperCase()}_URL`, value: `http://${release}-${s}:50051` });
          expect(ofKind("Service").map((x) => x.metadata.name)).toContain(d.metadata.name);
        }
      });

      it("gives each process only its own service keys from the Secret (the keys npm run service-keys makes, none the root), and each at-rest key only to the processes that run its service", () => {
        const secretKeys = new Set(Object.keys(serviceKeySet(randomBytes(32))));
        const suffix = (n: string) => n.toUpperCase().replace(/-/g, "_");
        const signerOf = (component: string): { signer: Signer; serves?: string } => {
          if (component === "gateway") return { signer: "gateway" };
          const worker = Object.entries(workers).find(([w]) => `${w}-worker` === component);
          return worker ? { signer: `${worker[1]}-worker` as Signer } : { signer: component as Signer, serves: component };
        };
        for (const d of ofKind("Deployment")) {
          const component = d.metadata.name.slice(release.length + 1);
          const env: any[] = d.spec.template.spec.containers[0].env;
          const { signer, serves } = signerOf(component);
          const isKey = (name: string) => (name.startsWith("FEEDS_") && name.endsWith("_KEY")) || name === "FEEDS_CALLER_KEYS";
          const keyed: Record<string, { name: string; key: string }> = Object.fromEntries(env.filter((e) => isKey(e.name)).map((e) => [e.name, e.valueFrom?.secretKeyRef]));
          const expected: Record<string, unknown> = {};
          if (namedSigners().includes(signer)) expected.FEEDS_SERVICE_KEY = { name: "feeds-secrets", key: `FEEDS_SERVICE_KEY_${suffix(signer)}` };
          if (serves) expected.FEEDS_CALLER_KEYS = { name: "feeds-secrets", key: `FEEDS_CALLER_KEYS_${suffix(serves)}` };
          if (component === "tenancy") expected.FEEDS_MASTER_KEY = { name: "feeds-secrets", key: "FEEDS_MASTER_KEY" };
          if (component === "notification" || component === "notify-worker") expected.FEEDS_WEBHOOK_KEY = { name: "feeds-secrets", key: "FEEDS_WEBHOOK_KEY" };
          expect(keyed, component).toEqual(expected);
          for (const ref of Object.values(keyed)) if (ref.key !== "FEEDS_MASTER_KEY" && ref.key !== "FEEDS_WEBHOOK_KEY") expect(secretKeys, `${component}: ${ref.key}`).toContain(ref.key);
        }
        // The notify worker fetches tenant-chosen URLs and calls no service: it holds no key.
        expect(deployment("notify-worker").spec.template.spec.containers[0].env.map((e: any) => e.name)).not.toContain("FEEDS_SERVICE_KEY");
      });

      it("probes each service and worker over grpc.health.v1 (liveness apart from readiness), the gateway on its own /livez and /readyz, and drains every pod before SIGTERM", () => {
        for (const c of [...services, ...workerComponents]) {
          const container = deployment(c).spec.template.spec.containers[0];
          const grpcPort = container.ports.find((p: any) => p.name === "grpc").containerPort;
          expect(container.startupProbe?.grpc, `${c} startupProbe`).toEqual({ port: grpcPort });
          expect(container.readinessProbe?.grpc, `${c} readinessProbe`).toEqual({ port: grpcPort });
          expect(container.livenessProbe?.grpc, `${c} livenessProbe`).toEqual({ port: grpcPort, service: "liveness" });
        }
        const gw = deployment("gateway").spec.template.spec.containers[0];
        // On the metrics port: the public API gains no route, and a stopped worker cannot make it unready.
        expect(gw.livenessProbe.httpGet).toEqual({ path: "/livez", port: "metrics" });
        expect(gw.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
        expect(gw.startupProbe.httpGet).toEqual({ path: "/livez", port: "metrics" });
        for (const d of ofKind("Deployment")) {
          const pod = d.spec.template.spec;
          expect(pod.containers[0].lifecycle?.preStop?.exec?.command, d.metadata.name).toEqual(["sleep", "5"]);
          expect(pod.terminationGracePeriodSeconds, d.metadata.name).toBe(30);
        }
      });

      it("runs every pod as the release's ServiceAccount, with no API token mounted", () => {
        const [account] = ofKind("ServiceAccount");
        expect(account.metadata.name).toBe(release);
        expect(account.automountServiceAccountToken).toBe(false);
        for (const d of ofKind("Deployment")) expect(d.spec.template.spec.serviceAccountName, d.metadata.name).toBe(release);
      });

      it(`installs the alert rules and the dashboard from the chart's one copy ${v.monitoring ? "(enabled)" : "only when enabled (they are not)"}`, () => {
        if (!v.monitoring) {
          expect(ofKind("PrometheusRule")).toEqual([]);
          expect(ofKind("ConfigMap")).toEqual([]);
          return;
        }
        const file = readFileSync(join(chart, "files/alerts.yaml"), "utf8");
        const alerts = [...file.matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]);
        expect(alerts.length).toBeGreaterThanOrEqual(7);
        const [rule] = ofKind("PrometheusRule");
        expect(rule.metadata.labels.release).toBe("kube-prometheus-stack");
        const rules = rule.spec.groups.flatMap((g: any) => g.rules);
        expect(rules.map((r: any) => r.alert)).toEqual(alerts);
        // Each runbook_url is the base plus a page of docs/runbooks.md that has the alert's section.
        const runbooks = readFileSync(join(root, "docs/runbooks.md"), "utf8");
        for (const r of rules) {
          expect(r.annotations.runbook_url, r.alert).toBe(`https://git.example.com/feeds/feeds/-/blob/v1.0.0/docs/runbooks.md#${r.alert.toLowerCase()}`);
          expect(runbooks, r.alert).toContain(`\n## ${r.alert}\n`);
        }
        expect(rules.find((r: any) => r.alert === "FeedsDeadLetters").annotations.summary).toBe("Tasks in the {{ $labels.queue }} dead-letter stream");
        const [dashboard] = ofKind("ConfigMap");
        expect(dashboard.metadata.labels.grafana_dashboard).toBe("1");
        expect(JSON.parse(dashboard.data["feeds.json"])).toEqual(JSON.parse(readFileSync(join(chart, "files/dashboard.json"), "utf8")));
      });

      it("gives every container resources and the hardened securityContext", () => {
        for (const d of ofKind("Deployment")) {
          const pod = d.spec.template.spec;
          expect(pod.automountServiceAccountToken, d.metadata.name).toBe(false);
          expect(pod.securityContext, d.metadata.name).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
          for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
            const where = `${d.metadata.name}/${c.name}`;
            for (const kind of ["requests", "limits"]) expect(Object.keys(c.resources?.[kind] ?? {}).sort(), `${where} ${kind}`).toEqual(["cpu", "memory"]);
            expect(c.securityContext, where).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, privileged: false });
            expect(c.securityContext.capabilities, where).toEqual({ drop: ["ALL"] });
          }
        }
      });

      it("covers every Deployment with a PodDisruptionBudget", () => {
        for (const d of ofKind("Deployment")) {
          const pdbs = ofKind("PodDisruptionBudget").filter((p) => matches(p.spec.selector, d.spec.template.metadata.labels));
          expect(pdbs.map((p) => p.metadata.name), d.metadata.name).toEqual([d.metadata.name]);
          expect(pdbs[0].spec.maxUnavailable).toBe(1);
        }
      });

      it("autoscales the gateway and every worker (the HPA owns their replica count)", () => {
        for (const c of ["gateway", ...workerComponents]) {
          const hpa = named("HorizontalPodAutoscaler", `${release}-${c}`);
          expect(hpa?.spec.scaleTargetRef, c).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: `${release}-${c}` });
          expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
          expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
          expect(deployment(c).spec.replicas, c).toBeUndefined();
        }
        for (const hpa of ofKind("HorizontalPodAutoscaler")) expect(deployment(hpa.metadata.name.slice(release.length + 1)), hpa.metadata.name).toBeDefined();
      });

      it("lets only the gateway, the services and the workers of this release reach a service", () => {
        const pods = ofKind("Deployment").map((d) => ({ name: d.metadata.name, labels: d.spec.template.metadata.labels as Record<string, string> }));
        const stranger = { "app.kubernetes.io/name": "other", "app.kubernetes.io/instance": "other" };
        const otherRelease = { ...pods[0]!.labels, "app.kubernetes.io/instance": "another-release" };
        for (const d of ofKind("Deployment")) {
          const component = d.metadata.name.slice(release.length + 1);
          const policies = ofKind("NetworkPolicy").filter((p) => matches(p.spec.podSelector, d.spec.template.metadata.labels));
          expect(policies.map((p) => p.metadata.name), component).toEqual([d.metadata.name]);
          const policy = policies[0];
          expect(policy.spec.policyTypes).toEqual(["Ingress"]);
          if (services.includes(component)) {
            for (const p of pods) expect(admits(policy, p.labels, "grpc"), `${p.name} -> ${component}`).toBe(true);
            expect(admits(policy, stranger, "grpc"), `a stranger -> ${component}`).toBe(false);
            expect(admits(policy, otherRelease, "grpc"), `another release -> ${component}`).toBe(false);
          } else if (component === "gateway") {
            expect(admits(policy, stranger, "http")).toBe(true);
            expect(admits(policy, stranger, "grpc")).toBe(false);
          } else {
            for (const p of [...pods.map((x) => x.labels), stranger]) expect(admits(policy, p, "grpc"), component).toBe(false);
          }
          // Scrapes come from the monitoring namespace only, and only where it is configured.
          const scrapeRules = (policy.spec.ingress ?? []).filter((r: any) => r.ports?.some((p: any) => p.port === "metrics"));
          expect(scrapeRules.map((r: any) => r.from), component).toEqual(
            v.monitoring ? [[{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }]] : [],
          );
        }
      });

      it(`has a ServiceMonitor for every Deployment ${v.monitoring ? "(enabled)" : "only when enabled (it is not)"}`, () => {
        if (!v.monitoring) {
          expect(ofKind("ServiceMonitor")).toEqual([]);
          return;
        }
        for (const d of ofKind("Deployment")) {
          const monitor = named("ServiceMonitor", d.metadata.name);
          expect(monitor?.metadata.labels.release, d.metadata.name).toBe("kube-prometheus-stack");
          expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "15s", scrapeTimeout: "10s" }]);
          // The Service it selects has a metrics port onto the container's metrics port.
          const svc = ofKind("Service").find((s) => matches(monitor.spec.selector, s.metadata.labels));
          expect(svc?.metadata.name).toBe(d.metadata.name);
          const container = d.spec.template.spec.containers[0];
          expect(svc.spec.ports.find((p: any) => p.name === "metrics")).toMatchObject({ targetPort: "metrics", port: 9464 });
          expect(container.ports.find((p: any) => p.name === "metrics")?.containerPort).toBe(9464);
          expect(container.env).toContainEqual({ name: "METRICS_PORT", value: "9464" });
        }
      });

      it(`gives every process the streams' and consumers' replica count (NATS_REPLICAS ${v.natsReplicas})`, () => {
        for (const d of ofKind("Deployment")) {
          expect(d.spec.template.spec.containers[0].env, d.metadata.name).toContainEqual({ name: "NATS_REPLICAS", value: v.natsReplicas });
        }
      });

      if (v.monitoring) {
        it("reads every server URL from an existing Secret and serves the gateway through a TLS ingress", () => {
          for (const d of ofKind("Deployment")) {
            const env = d.spec.template.spec.containers[0].env;
            for (const [name, secret] of [["MONGO_URL", "feeds-mongodb"], ["NATS_URL", "feeds-nats"], ["REDIS_URL", "feeds-redis"]]) {
              const e = env.find((x: any) => x.name === name);
              expect(e.value, `${d.metadata.name} ${name}`).toBeUndefined();
              expect(e.valueFrom.secretKeyRef.name).toBe(secret);
            }
          }
          const [ingress] = ofKind("Ingress");
          expect(ingress.spec.tls[0].hosts).toEqual(["feeds.example.com"]);
          expect(ingress.spec.rules[0].http.paths[0].backend.service).toEqual({ name: `${release}-gateway`, port: { name: "http" } });
          expect(named("Service", `${release}-gateway`).spec.ports.map((p: any) => p.name)).toContain("http");
        });
      }
    });
  }

  describe("the monolith profile (values-monolith.yaml)", () => {
    let objects: any[] = [];
    const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
    beforeAll(() => {
      const lint = run(tools.helm, ["lint", "--strict", chart, "-f", join(chart, "values-monolith.yaml")]);
      expect(lint.stdout + lint.stderr).toContain("1 chart(s) linted, 0 chart(s) failed");
      objects = render(["values-monolith.yaml"]);
    });

    it("runs the whole system as one Deployment of system/dist/main.js, with the keys of tenancy and notification and no service keys", () => {
      expect(ofKind("Deployment").map((d) => d.metadata.name)).toEqual([`${release}-gateway`]);
      const pod = ofKind("Deployment")[0].spec.template.spec;
      expect(pod.initContainers).toBeUndefined();
      const [c] = pod.containers;
      expect(c.command).toEqual(["node", "--import", "@feeds/kit/otel", "system/dist/main.js"]);
      const env: any[] = c.env;
      const names = env.map((e) => e.name);
      expect(names.filter((n) => n.endsWith("_URL")).sort()).toEqual(["MONGO_URL", "NATS_URL", "REDIS_URL"]);
      expect(names).not.toContain("FEEDS_SERVICE_KEY");
      expect(names).not.toContain("FEEDS_CALLER_KEYS");
      expect(names).not.toContain("FEEDS_ROLE");
      expect(env.find((e) => e.name === "FEEDS_MASTER_KEY").valueFrom.secretKeyRef).toEqual({ name: "feeds-secrets", key: "FEEDS_MASTER_KEY" });
      expect(env.find((e) => e.name === "FEEDS_WEBHOOK_KEY").valueFrom.secretKeyRef).toEqual({ name: "feeds-secrets", key: "FEEDS_WEBHOOK_KEY" });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
      expect(c.resources).toEqual({ requests: { cpu: "500m", memory: "512Mi" }, limits: { cpu: "2", memory: "1Gi" } });
      expect(ofKind("Deployment")[0].spec.replicas).toBe(1);
      expect(ofKind("HorizontalPodAutoscaler")).toEqual([]);
      // Its Service, budget and policy, and nothing of the split layout.
      expect(ofKind("Service").map((s) => s.metadata.name)).toEqual([`${release}-gateway`]);
      expect(ofKind("PodDisruptionBudget").map((s) => s.metadata.name)).toEqual([`${release}-gateway`]);
      expect(ofKind("NetworkPolicy").map((s) => s.metadata.name)).toEqual([`${release}-gateway`]);
    });
  });

  it("values.schema.json refuses a misspelt or misplaced value and a mode it does not know, naming it", () => {
    for (const [args, message] of [
      [["--set", "gatway.replicas=3"], "additional properties 'gatway' not allowed"],
      [["--set", "config.natsReplica=3"], "at '/config': additional properties 'natsReplica' not allowed"],
      [["--set", "services.search.replicas=1"], "invalid propertyName 'search'"],
      [["--set", "mode=mono"], "/mode"],
      [["--set", "config.natsReplicas=9"], "/config/natsReplicas"],
    ] as const) {
      const r = run(tools.helm, ["template", release, chart, ...args]);
      expect(r.status, args.join(" ")).not.toBe(0);
      expect(r.stderr, args.join(" ")).toContain(message);
    }
    // A values file is held to it as well.
    const dir = mkdtempSync(join(tmpdir(), "feeds-values-"));
    try {
      writeFileSync(join(dir, "typo.yaml"), "workers:\n  fanout:\n    autoscalling: { enabled: false }\n");
      const r = run(tools.helm, ["lint", "--strict", chart, "-f", join(dir, "typo.yaml")]);
      expect(r.status).not.toBe(0);
      expect(r.stdout + r.stderr).toContain("additional properties 'autoscalling' not allowed");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("packages the alert rules and the dashboard, not their tests", () => {
    const dir = mkdtempSync(join(tmpdir(), "feeds-chart-"));
    try {
      const r = run(tools.helm, ["package", chart, "-d", dir]);
      expect(r.status, r.stderr).toBe(0);
      const listed = run("tar", ["-tzf", join(dir, "feeds-0.3.0.tgz")]).stdout.split("\n");
      expect(listed).toEqual(expect.arrayContaining(["feeds/files/alerts.yaml", "feeds/files/dashboard.json", "feeds/values.schema.json", "feeds/values-monolith.yaml"]));
      expect(listed.filter((f) => f.endsWith(".test.yaml"))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the checker refuses a misspelt field and a field in the wrong place, naming each", () => {
    const rendered = run(tools.helm, ["template", release, chart]).stdout;
    expect(rendered).toContain("containerPort:");
    const misspelt = rendered.replace("containerPort:", "containerport:");
    const misplaced = rendered.replace(/(\n {6}securityContext:\n)/, "$1        readOnlyRootFilesystem: true\n");
    expect(misplaced).not.toBe(rendered);
    for (const [broken, field] of [
      [misspelt, /unknown field "spec\.template\.spec\.(initContainers|containers)\[0\]\.ports\[0\]\.containerport"/],
      [misplaced, /unknown field "spec\.template\.spec\.securityContext\.readOnlyRootFilesystem"/],
    ] as const) {
      const checked = run(tools.k8sCheck, [], broken);
      expect(checked.status).toBe(1);
      expect(checked.stderr).toMatch(field);
      expect(checked.stderr).toMatch(/FAIL stdin document \d+ \(feeds\/templates\/\w+\.yaml\): Deployment feeds-\w+/);
    }
  });

  it("docker-compose.yml loads and runs every service and the gateway the chart runs, each with only its own keys", () => {
    const keys = serviceKeySet(randomBytes(32));
    const masterKey = randomBytes(32).toString("base64");
    const webhookKey = randomBytes(32).toString("base64");
    const loaded = run(tools.k8sCheck, ["-compose", join(root, "docker-compose.yml")], undefined, { FEEDS_MASTER_KEY: masterKey, FEEDS_WEBHOOK_KEY: webhookKey, ...keys });
    expect(loaded.stderr).toBe("");
    expect(loaded.status).toBe(0);
    const { services: composed, environment } = JSON.parse(loaded.stdout) as { services: string[]; environment: Record<string, Record<string, string | null>> };
    // Compose runs each worker inside its service's container (FEEDS_ROLE defaults to all).
    expect(composed).toEqual(expect.arrayContaining(["gateway", ...services, ...new Set(Object.values(workers))]));
    expect(composed.sort()).toEqual(["gateway", "mongo", "nats", "redis", ...services].sort());
    const keysOf = (name: string) =>
      Object.fromEntries(Object.entries(environment[name] ?? {}).filter(([k]) => ["FEEDS_INTERNAL_KEY", "FEEDS_MASTER_KEY", "FEEDS_WEBHOOK_KEY", "FEEDS_SERVICE_KEY", "FEEDS_CALLER_KEYS"].includes(k)));
    const suffix = (n: string) => n.toUpperCase().replace(/-/g, "_");
    expect(keysOf("gateway")).toEqual({ FEEDS_SERVICE_KEY: keys.FEEDS_SERVICE_KEY_GATEWAY });
    for (const s of services) {
      expect(keysOf(s), s).toEqual({
        ...(s === "tenancy" ? { FEEDS_MASTER_KEY: masterKey } : {}),
        ...(s === "notification" ? { FEEDS_WEBHOOK_KEY: webhookKey } : {}),
        ...(namedSigners().includes(s as Signer) ? { FEEDS_SERVICE_KEY: keys[`FEEDS_SERVICE_KEY_${suffix(s)}`] } : {}),
        FEEDS_CALLER_KEYS: keys[`FEEDS_CALLER_KEYS_${suffix(s)}`],
      });
    }
    // Without a key it names, the file does not load and names it.
    for (const variable of ["FEEDS_SERVICE_KEY_GATEWAY", "FEEDS_MASTER_KEY", "FEEDS_WEBHOOK_KEY"]) {
      const unset = run(tools.k8sCheck, ["-compose", join(root, "docker-compose.yml")], undefined, { FEEDS_MASTER_KEY: masterKey, FEEDS_WEBHOOK_KEY: webhookKey, ...keys, [variable]: "" });
      expect(unset.status, variable).not.toBe(0);
      expect(unset.stderr).toContain(variable);
    }
  });
});
