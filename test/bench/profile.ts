// Where a bench run's CPU goes, by layer: a V8 CPU profile of the measured run, its self time summed per layer
// (kysely, the pg driver, express, openapi-backend + ajv, our src/<folder>, node's http and net, GC, ...), per
// request. A ratio against a bare route says how much slower the whole stack is; this says what the difference is
// spent on, which is what a ratio that misses its target needs to be read by. A builtin or binding without a script
// (JSON.parse, a socket's writev) counts to its caller's layer. The times are the main thread's sampled busy time:
// its CPU time on an idle machine, more on a loaded one (a wait for a core counts to the frame it interrupted), so on
// a shared machine the shares and the whole-stack-minus-bare differences say more than the totals.
//
// - In a bench run: with BENCH_PROFILE_DIR set, every measured run of a server in this process (the load() calls
//   with `cost: true`: POST /orders, the hot product, completion, license validation) is profiled, the warm-up
//   not, and written as <dir>/<label>-<n>.cpuprofile (Chrome DevTools opens it) beside <label>-<n>.md, its
//   attribution; at the end the tables and a whole-stack-against-bare comparison of each pair are printed to stderr
//   and written to <dir>/summary.md. The order-list servers, processes of their own, get --cpu-prof and write
//   theirs to <dir>/list-full/ and <dir>/list-bare/ when they stop (their whole life: start-up and every list load).
//   Unset, nothing is profiled. Sampling costs CPU too: a profiled run's figures are not figures of record
//   (BENCH_PROFILE_INTERVAL_US, 100 by default, samples less often).
// - One scenario alone (no 14-minute full bench): `BENCH_PROFILE_DIR=/tmp/prof DATABASE_URL=postgres://... npm run
//   bench:profile -- writes` (or `licenses`; test/bench/profile-run.ts). Small settings keep it short, e.g.
//   BENCH_ROUNDS=1 BENCH_SECONDS=3 BENCH_WARMUP_SECONDS=1 BENCH_COMPLETIONS=300.
// - Saved profiles: `npx tsx test/bench/profile.ts FILE.cpuprofile [...] [--requests N]` prints each one's table
//   (per request when N is given; a bundled script's frames are named by its source map's sources).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Profiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export type Profile = Profiler.Profile;

/**
 * µs between samples: requests of a millisecond or two need finer sampling than V8's default of 1 ms. Each sample
 * costs CPU as well (the measured CPU per request of a write run nearly doubled at 100 µs on a busy 2-core machine),
 * so BENCH_PROFILE_INTERVAL_US can make it coarser; the shares hold, being sampled alike.
 */
export const samplingIntervalUs = () => Number(process.env.BENCH_PROFILE_INTERVAL_US || 100);

/** Profiles this process until `stop()`, which returns the profile and ends the inspector session. */
export async function startProfile(): Promise<{ stop(): Promise<Profile> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: samplingIntervalUs() });
  await session.post('Profiler.start');
  return {
    async stop() {
      try {
        return (await session.post('Profiler.stop')).profile;
      } finally {
        await session.post('Profiler.disable');
        session.disconnect();
      }
    },
  };
}

// ---- Layers ----

const IDLE = '(idle)';

/** Packages that are one layer together (their own name otherwise). */
const PACKAGE_LAYERS: Record<string, string> = {
  ...layer('pg driver', 'pg', 'pg-protocol', 'pg-pool', 'pg-types', 'pg-connection-string', 'pgpass', 'postgres-array'),
  ...layer('pg driver', 'postgres-bytea', 'postgres-date', 'postgres-interval'),
  ...layer('express', 'express', 'router', 'body-parser', 'raw-body', 'finalhandler', 'send', 'serve-static', 'qs'),
  ...layer('express', 'type-is', 'content-type', 'accepts', 'negotiator', 'mime-types', 'mime-db', 'media-typer'),
  ...layer('express', 'cookie', 'cookie-signature', 'etag', 'fresh', 'on-finished', 'parseurl', 'path-to-regexp'),
  ...layer('express', 'proxy-addr', 'forwarded', 'range-parser', 'statuses', 'vary', 'depd', 'encodeurl'),
  ...layer('express', 'http-errors', 'iconv-lite', 'content-disposition', 'debug', 'ms', 'bytes', 'unpipe'),
  ...layer('express', 'ee-first', 'side-channel', 'side-channel-list', 'side-channel-map', 'side-channel-weakmap'),
  ...layer('rate limiter', 'express-rate-limit', 'rate-limit-redis', 'ip-address'),
  ...layer('openapi-backend + ajv', 'openapi-backend', 'ajv', 'ajv-formats', 'fast-deep-equal', 'fast-uri'),
  ...layer('openapi-backend + ajv', 'json-schema-traverse', 'bath-es5', 'mock-json-schema', 'dereference-json-schema'),
  // openapi-backend's own dependencies (lodash is no one else's among the server's packages).
  ...layer('openapi-backend + ajv', 'lodash', 'lodash.merge', '@apidevtools/json-schema-ref-parser', 'js-yaml'),
  ...layer('prom-client', 'prom-client', 'tdigest', 'bintrees'),
  ...layer('logging', 'winston', 'logform', 'winston-transport', 'triple-beam', 'safe-stable-stringify', 'fecha'),
  ...layer('logging', '@colors/colors', '@dabh/diagnostics', 'one-time', 'stack-trace', '@so-ric/colorspace'),
};
const PREFIX_LAYERS: [prefix: string, layer: string][] = [
  ['@opentelemetry/', 'tracing'],
  ['openapi-', 'openapi-backend + ajv'],
];

function layer(name: string, ...packages: string[]): Record<string, string> {
  return Object.fromEntries(packages.map((p) => [p, name]));
}

function packageLayer(pkg: string): string {
  return PACKAGE_LAYERS[pkg] ?? PREFIX_LAYERS.find(([prefix]) => pkg.startsWith(prefix))?.[1] ?? pkg;
}

/** Node's own modules; its sockets, streams and http parser apart, as the part a bare route pays for as well. */
function nodeLayer(url: string): string {
  return /^node:(?:internal\/)?(?:_?http|net|stream|streams\/|stream_base|tls|dns|dgram)/.test(url)
    ? 'node http+net'
    : 'node internals';
}

/** The layer of a frame of the project itself (or of its compiled copy in dist/), by its top folder. */
function projectLayer(path: string): string | undefined {
  const m = /\/(src|db|handlers|test|codegen)\/(?:([^/]+)\/)?/.exec(path);
  if (!m) return undefined;
  if (m[1] === 'test') return 'bench harness';
  if (m[1] === 'src' && m[2]) return `ours: src/${m[2]}`;
  return `ours: ${m[1]}`;
}

/** Ajv's compiled validators (validate0, validate12, ...): `new Function` code, without a script url. */
const AJV_VALIDATOR = /^validate\d+$/;

/**
 * A frame without a script: a builtin or a binding (JSON.stringify, a socket's writev) or code made by `new
 * Function`. Its time is its caller's: the syscall of a socket write is node's http+net, a JSON.parse of a row the
 * driver's. V8's own pseudo-frames, "(program)", "(garbage collector)", "(idle)", "(root)", are none of these.
 */
function isCalledNative(frame: { url: string; functionName: string }): boolean {
  return frame.url === '' && !frame.functionName.startsWith('(') && !AJV_VALIDATOR.test(frame.functionName);
}

/**
 * The layer a profile frame's self time counts to on its own ("(idle)" for idle time, which is not busy; a called
 * native as "V8 / native", which attribute() counts to its caller instead).
 */
export function layerOf(frame: { url: string; functionName: string }): string {
  if (frame.functionName === IDLE) return IDLE;
  if (frame.functionName === '(garbage collector)') return 'GC';
  if (frame.url === '' && AJV_VALIDATOR.test(frame.functionName)) return 'openapi-backend + ajv';
  if (frame.url === '') return 'V8 / native';
  if (frame.url.startsWith('node:')) return nodeLayer(frame.url);
  const path = frame.url.startsWith('file:') ? fileURLToPath(frame.url) : frame.url;
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];
  if (pkg) return packageLayer(pkg);
  return projectLayer(path) ?? `other: ${basename(path)}`;
}

// ---- Attribution ----

export interface LayerRow {
  layer: string;
  /** Self time in the layer over the whole profile. */
  ms: number;
  /** The same per request (when the request count is known). */
  msPerRequest?: number;
  /** Share of the busy (non-idle) time, 0-100. */
  percent: number;
}

export interface Attribution {
  requests?: number;
  /** Sampled time that was not idle. */
  busyMs: number;
  busyMsPerRequest?: number;
  idleMs: number;
  /** Largest first. */
  rows: LayerRow[];
}

/**
 * µs each sample stands for. As Chrome DevTools reads a profile: a sample lasts until the next one (timeDeltas[i]
 * is the time from sample i-1 to sample i), the last one until the profile's end.
 */
function sampleDurations(profile: Profile): number[] {
  const deltas = profile.timeDeltas ?? [];
  const count = profile.samples?.length ?? 0;
  const last = profile.endTime - (profile.startTime + deltas.slice(0, count).reduce((a, b) => a + b, 0));
  return Array.from({ length: count }, (_, i) => Math.max(0, i + 1 < count ? (deltas[i + 1] ?? 0) : last));
}

/** Each node's layer: its frame's, or for a called native its nearest caller's with a script. */
function layersOfNodes(profile: Profile): Map<number, string> {
  const parentOf = new Map(profile.nodes.flatMap((n) => (n.children ?? []).map((child) => [child, n] as const)));
  const layers = new Map<number, string>();
  const layerOfNode = (node: Profiler.ProfileNode): string => {
    let layer = layers.get(node.id);
    if (layer === undefined) {
      const caller = parentOf.get(node.id);
      layer = isCalledNative(node.callFrame) && caller ? layerOfNode(caller) : layerOf(node.callFrame);
      layers.set(node.id, layer);
    }
    return layer;
  };
  profile.nodes.forEach((node) => layerOfNode(node));
  return layers;
}

/** Self time per layer, µs. */
function selfTimeByLayer(profile: Profile): Map<string, number> {
  const layerOfNode = layersOfNodes(profile);
  const durations = sampleDurations(profile);
  const byLayer = new Map<string, number>();
  profile.samples?.forEach((id, i) => {
    const name = layerOfNode.get(id) ?? 'V8 / native';
    byLayer.set(name, (byLayer.get(name) ?? 0) + durations[i]!);
  });
  return byLayer;
}

/** The profile's busy time by layer, per request when `requests` is given. */
export function attribute(profile: Profile, requests?: number): Attribution {
  const byLayer = selfTimeByLayer(profile);
  const idleMs = (byLayer.get(IDLE) ?? 0) / 1000;
  byLayer.delete(IDLE);
  const busyMs = [...byLayer.values()].reduce((a, b) => a + b, 0) / 1000;
  const perRequest = (ms: number) => (requests ? { msPerRequest: ms / requests } : {});
  const rows = [...byLayer]
    .map(([name, us]): LayerRow => ({ layer: name, ms: us / 1000, ...perRequest(us / 1000), percent: 0 }))
    .map((row) => ({ ...row, percent: busyMs > 0 ? (row.ms / busyMs) * 100 : 0 }))
    .sort((a, b) => b.ms - a.ms);
  return {
    ...(requests ? { requests, busyMsPerRequest: busyMs / requests } : {}),
    busyMs,
    idleMs,
    rows,
  };
}

// ---- Tables ----

const ms3 = (ms: number) => ms.toFixed(3);
const pct = (p: number) => `${p.toFixed(1)}%`;

/** A Markdown table of an attribution: per request when its request count is known, total ms otherwise. */
export function formatAttribution(title: string, a: Attribution): string {
  const perRequest = a.busyMsPerRequest !== undefined;
  const head = perRequest
    ? `${a.requests} requests: ${ms3(a.busyMsPerRequest!)} busy ms per request`
    : `${Math.round(a.busyMs)} busy ms`;
  return [
    `### ${title}`,
    '',
    `${head} (self time by layer; ${Math.round(a.idleMs)} ms idle left out).`,
    '',
    perRequest ? '| layer | ms per request | % of busy |' : '| layer | ms | % of busy |',
    '| --- | ---: | ---: |',
    ...a.rows.map((r) => `| ${r.layer} | ${perRequest ? ms3(r.msPerRequest!) : r.ms.toFixed(1)} | ${pct(r.percent)} |`),
    '',
  ].join('\n');
}

/** Whole stack against its bare route, layer by layer, per request: where the extra time per request goes. */
export function formatComparison(title: string, full: Attribution, bare: Attribution): string {
  const perRequest = (a: Attribution) => new Map(a.rows.map((r) => [r.layer, r.msPerRequest ?? 0]));
  const [f, b] = [perRequest(full), perRequest(bare)];
  const extra = (full.busyMsPerRequest ?? 0) - (bare.busyMsPerRequest ?? 0);
  const rows = [...new Set([...f.keys(), ...b.keys()])]
    .map((name) => ({ name, full: f.get(name) ?? 0, bare: b.get(name) ?? 0 }))
    .sort((x, y) => y.full - y.bare - (x.full - x.bare));
  return [
    `### ${title}`,
    '',
    `Whole stack ${ms3(full.busyMsPerRequest ?? 0)} busy ms per request, bare route ` +
      `${ms3(bare.busyMsPerRequest ?? 0)} ms: ${ms3(extra)} ms more, by layer (self time).`,
    '',
    '| layer | whole stack ms/req | bare ms/req | difference | share of the difference |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${ms3(r.full)} | ${ms3(r.bare)} | ${ms3(r.full - r.bare)} | ` +
        `${extra > 0 ? pct(((r.full - r.bare) / extra) * 100) : '-'} |`,
    ),
    '',
  ].join('\n');
}

// ---- Saved profiles (bundled scripts) ----

/** A script's source map, when it names one in a file beside it (npm start's dist/bundle/*.js do). */
function sourceMapOf(url: string): { map: SourceMap; dir: string } | undefined {
  if (!url.startsWith('file:') || url.includes('/node_modules/')) return undefined;
  try {
    const file = fileURLToPath(url);
    const ref = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(file, 'utf8'))?.[1];
    if (!ref || ref.startsWith('data:')) return undefined;
    const mapFile = resolve(dirname(file), ref);
    return { map: new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as SourceMapPayload), dir: dirname(mapFile) };
  } catch {
    return undefined;
  }
}

/**
 * The profile with each frame of a source-mapped script named by the source it came from: every frame of a bundle
 * has the bundle's url, which says nothing of its layer.
 */
export function withOriginalSources(profile: Profile): Profile {
  const maps = new Map<string, ReturnType<typeof sourceMapOf>>();
  const original = (frame: Profiler.ProfileNode['callFrame']): string | undefined => {
    if (!maps.has(frame.url)) maps.set(frame.url, sourceMapOf(frame.url));
    const found = maps.get(frame.url);
    const entry = found?.map.findEntry(frame.lineNumber, frame.columnNumber);
    if (!found || !entry || !('originalSource' in entry)) return undefined;
    const source = entry.originalSource;
    return /^[a-z]+:/.test(source) ? source : pathToFileURL(resolve(found.dir, source)).href;
  };
  return {
    ...profile,
    nodes: profile.nodes.map((node) => {
      const url = original(node.callFrame);
      return url ? { ...node, callFrame: { ...node.callFrame, url } } : node;
    }),
  };
}

// ---- The bench's side (test/bench/load.ts, order-lists.ts) ----

const profileDir = () => process.env.BENCH_PROFILE_DIR || undefined;
const runsOfLabel = new Map<string, number>();
const profiled: { name: string; attribution: Attribution }[] = [];

/**
 * With BENCH_PROFILE_DIR set, profiles a measured run: `stop(requests)` writes <label>-<n>.cpuprofile and its
 * attribution. Unset, undefined: no inspector session, nothing in the way of the run.
 */
export async function profileMeasuredRun(
  label: string,
): Promise<{ stop(requests: number): Promise<void> } | undefined> {
  const dir = profileDir();
  if (!dir) return undefined;
  const n = (runsOfLabel.get(label) ?? 0) + 1;
  runsOfLabel.set(label, n);
  const name = `${label}-${n}`;
  const profiler = await startProfile();
  return {
    async stop(requests) {
      const profile = await profiler.stop();
      const attribution = attribute(profile, requests);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      writeFileSync(join(dir, `${name}.md`), formatAttribution(name, attribution));
      profiled.push({ name, attribution });
    },
  };
}

/**
 * Node flags that make a server process write its CPU profile to <dir>/<name>/ when it exits (none when unset). At
 * V8's default interval (1 ms): a profile of the process's whole life has samples enough, and is written before
 * the bench's stop gives up waiting and kills it.
 */
export function processProfileFlags(name: string): string[] {
  const dir = profileDir();
  if (!dir) return [];
  mkdirSync(join(dir, name), { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${join(dir, name)}`];
}

/** Each profiled run's table, then whole stack against bare for each pair of runs (create-full-1, create-bare-1). */
export function reportProfiles(): void {
  const dir = profileDir();
  if (!dir || profiled.length === 0) return;
  const byName = new Map(profiled.map((p) => [p.name, p.attribution]));
  const comparisons = profiled.flatMap(({ name, attribution }) => {
    const bare = byName.get(name.replace(/-full-(\d+)$/, '-bare-$1'));
    return /-full-\d+$/.test(name) && bare
      ? [formatComparison(`${name.replace('-full-', ' #')}: whole stack against bare`, attribution, bare)]
      : [];
  });
  const text = [...profiled.map((p) => formatAttribution(p.name, p.attribution)), ...comparisons].join('\n');
  writeFileSync(join(dir, 'summary.md'), text);
  console.error(`\nCPU profiles (${dir}, summary.md):\n\n${text}`);
}

// ---- CLI ----

function main(args: string[]): void {
  const at = args.indexOf('--requests');
  const requests = at >= 0 ? Number(args[at + 1]) : undefined;
  const files = args.filter((_, i) => at < 0 || (i !== at && i !== at + 1));
  if (files.length === 0 || (requests !== undefined && !(requests > 0))) {
    console.error('usage: tsx test/bench/profile.ts FILE.cpuprofile [...] [--requests N]');
    process.exit(2);
  }
  for (const file of files) {
    const profile = withOriginalSources(JSON.parse(readFileSync(file, 'utf8')) as Profile);
    console.log(formatAttribution(basename(file), attribute(profile, requests)));
  }
}

if (require.main === module) main(process.argv.slice(2));
