import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { otelConfigured } from "../src/otel-env.js";

// The `--import` hook (kit/src/otel.ts): with no OTEL_* asking for traces nothing is started (the
// SDK is not even loaded, the API's provider stays the no-op one, log lines carry no ids); with
// an exporter named, the SDK runs and a log line written inside a span names its trace and span.

const kitDir = fileURLToPath(new URL("..", import.meta.url));

// Runs in a child process under the hook (built: dist/otel.js), from the kit's folder.
const probe = `
import { createLogger } from "@feeds/kit";
import { trace } from "@opentelemetry/api";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const log = createLogger({ LOG_LEVEL: "info" }, "probe");
log.info("outside");
trace.getTracer("probe").startActiveSpan("probe", (span) => { log.info("inside"); span.end(); });
const sdkLoaded = Object.keys(require.cache).some((k) => k.includes("@opentelemetry/sdk-node"));
console.log(JSON.stringify({ on: globalThis[Symbol.for("feeds.tracing.on")] === true, provider: trace.getTracerProvider().getDelegate().constructor.name, sdkLoaded }));
`;

interface Probe {
  on: boolean;
  provider: string;
  sdkLoaded: boolean;
  lines: Record<string, unknown>[];
}

/** The probe under the hook, with the parent's environment minus every OTEL_* variable, plus `otel`. */
function runProbe(otel: Record<string, string>): Promise<Probe> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("OTEL_") && v !== undefined) env[k] = v;
  Object.assign(env, otel);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--import", "./dist/otel.js", "--input-type=module", "-e", probe], { cwd: kitDir, env }, (err, stdout) => {
      if (err) return reject(new Error(`the probe failed: ${err.message}`, { cause: err }));
      // pino's lines and the probe's answer (a console exporter's span dumps are not JSON lines).
      const json = stdout
        .split("\n")
        .filter((l) => l.startsWith("{") && l.endsWith("}"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const answer = json.find((j) => "sdkLoaded" in j) as Omit<Probe, "lines">;
      resolve({ ...answer, lines: json.filter((j) => "msg" in j) });
    });
  });
}

describe("the OpenTelemetry hook", () => {
  it("starts nothing when no OTEL_* variable is set: no SDK loaded, the no-op provider, no ids in log lines", async () => {
    const p = await runProbe({});
    expect(p.on).toBe(false);
    expect(p.sdkLoaded).toBe(false);
    expect(p.provider).toBe("NoopTracerProvider");
    expect(p.lines.map((l) => l.msg)).toEqual(["outside", "inside"]);
    for (const l of p.lines) expect(l).not.toHaveProperty("trace_id");
  });

  it("starts nothing with OTEL_SERVICE_NAME alone, nor with OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true", async () => {
    const cases: Record<string, string>[] = [{ OTEL_SERVICE_NAME: "x" }, { OTEL_TRACES_EXPORTER: "none" }, { OTEL_TRACES_EXPORTER: "console", OTEL_SDK_DISABLED: "true" }];
    for (const otel of cases) {
      const p = await runProbe(otel);
      expect({ otel, on: p.on, sdkLoaded: p.sdkLoaded }).toEqual({ otel, on: false, sdkLoaded: false });
    }
  });

  it("with an exporter named, starts the SDK, and a log line inside a span carries its trace and span ids (none outside)", async () => {
    const p = await runProbe({ OTEL_TRACES_EXPORTER: "console" });
    expect(p.on).toBe(true);
    expect(p.sdkLoaded).toBe(true);
    expect(p.provider).not.toBe("NoopTracerProvider");
    const [outside, inside] = p.lines;
    expect(outside).not.toHaveProperty("trace_id");
    expect(inside?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(inside?.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it("otelConfigured: an exporter or an OTLP endpoint turns traces on; none, disabled or nothing leaves them off", () => {
    expect(otelConfigured({})).toBe(false);
    expect(otelConfigured({ OTEL_SERVICE_NAME: "feeds" })).toBe(false);
    expect(otelConfigured({ OTEL_TRACES_EXPORTER: " " })).toBe(false);
    expect(otelConfigured({ OTEL_TRACES_EXPORTER: "none" })).toBe(false);
    expect(otelConfigured({ OTEL_TRACES_EXPORTER: "otlp,none" })).toBe(false);
    expect(otelConfigured({ OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(otelConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(otelConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(otelConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "TRUE" })).toBe(false);
  });
});
