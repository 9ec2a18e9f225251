// helm and the manifest checker, built from the Go module in this folder (its go.mod pins helm,
// client-go and the rest; helm is no Debian package) into .cache/k8s-check/, rebuilt only when
// go.mod, go.sum or main.go change.
//
//   node scripts/k8s-check/tools.mjs    -> builds both if needed, prints {"helm","k8sCheck"}
//
// Plain ESM on Node built-ins only, like scripts/infra.mjs, whose buildGo does the building.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGo } from '../infra.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_ROOT = path.resolve(HERE, '..', '..');
const FILES = ['go.mod', 'go.sum', 'main.go'];
const defaultLog = (msg) => process.stderr.write(`[k8s-check] ${msg}\n`);

// The version of `module` that go.mod requires.
function required(module) {
  const text = fs.readFileSync(path.join(HERE, 'go.mod'), 'utf8');
  const m = new RegExp(`^\\s*${module.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(text);
  if (!m) throw new Error(`scripts/k8s-check/go.mod does not require ${module}`);
  return m[1];
}

/** Builds helm (helm.sh/helm/v3/cmd/helm at go.mod's version) unless up to date; returns its path. */
export function buildHelm({ root = DEFAULT_ROOT, log = defaultLog } = {}) {
  // What helm's own Makefile stamps in: its version, and the Kubernetes version of its client-go
  // (v0.37.x -> 1.37), which `helm template` and `helm lint` take as the cluster's.
  const k8sMinor = required('k8s.io/client-go').split('.')[1];
  const ldflags = [
    '-s -w',
    `-X helm.sh/helm/v3/internal/version.version=${required('helm.sh/helm/v3')}`,
    ...['pkg/chartutil', 'pkg/lint/rules'].flatMap((p) => [
      `-X helm.sh/helm/v3/${p}.k8sVersionMajor=1`,
      `-X helm.sh/helm/v3/${p}.k8sVersionMinor=${k8sMinor}`,
    ]),
  ].join(' ');
  return buildGo({
    name: 'helm',
    what: 'helm',
    srcDir: HERE,
    files: FILES,
    pkg: 'helm.sh/helm/v3/cmd/helm',
    ldflags,
    env: { CGO_ENABLED: '0' },
    bin: path.join(root, '.cache', 'k8s-check', 'helm'),
    coldNote: 'a cold build takes a few minutes: see deploy/README.md',
    root,
    log,
  });
}

/** Builds the manifest checker (main.go here) unless up to date; returns its path. */
export function buildK8sCheck({ root = DEFAULT_ROOT, log = defaultLog } = {}) {
  return buildGo({
    name: 'k8s-check',
    what: 'the manifest checker',
    srcDir: HERE,
    files: FILES,
    env: { CGO_ENABLED: '0' },
    bin: path.join(root, '.cache', 'k8s-check', 'k8s-check'),
    coldNote: 'a cold build takes a few minutes: see deploy/README.md',
    root,
    log,
  });
}

/** Both tools, one after the other (the two builds share most packages through Go's cache). */
export async function buildK8sTools(opts = {}) {
  const helm = await buildHelm(opts);
  const k8sCheck = await buildK8sCheck(opts);
  return { helm, k8sCheck };
}

const isMain = (() => {
  try { return fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url)); } catch { return false; }
})();
if (isMain) {
  try {
    process.stdout.write(`${JSON.stringify(await buildK8sTools())}\n`);
  } catch (e) {
    process.stderr.write(`[k8s-check] ${e.stack || e}\n`);
    process.exitCode = 1;
  }
}
