// `npm start`: runs the compiled server (dist/bundle/server.js, see bringBundlesUpToDate) in this process, first
// compiling whatever changed since the last start (`npm run worker` and `npm run cli` run the worker and the admin CLI the same way). Running the TypeScript through tsx cost about a second of every start (a second process, loader
// hooks, on-the-fly transforms); compiled JavaScript starts at once.
//
// dist/.start-manifest.json records the SHA-1 of every source file (the folders tsconfig.build.json includes) and of
// the compiler settings; a file whose hash changed is transpiled again on its own (ts.transpileModule with the
// options of tsconfig.build.json: the project sets isolatedModules, so this is what tsc emits for it), and the output
// of a deleted source is removed. TypeScript is loaded only when something changed: a fresh clone compiles everything
// once (a few seconds), an edit recompiles one file. As with tsx, type errors do not stop a start (`npm run
// typecheck` checks them); syntax errors do. Plain JavaScript, so that nothing has to compile it.
// `node codegen/start.mjs --compile-only` brings dist/ up to date and exits (`npm run bench` uses it);
// `node codegen/start.mjs --cli <command…>` runs the admin CLI from dist/ (`npm run cli`), `--worker` the worker.
// Where there are no sources (the Docker image: no tsconfig.build.json), nothing is compiled: dist/ runs as it is.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { createRequire, enableCompileCache } from 'node:module';
import { dirname, join, relative } from 'node:path';
import console from 'node:console';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { runBundle } from './run-bundle.mjs';
import { writeAtomic } from './write-atomic.mjs';
import { mapStackTraces } from './stack-traces.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const manifestPath = join(dist, '.start-manifest.json');
const require = createRequire(join(root, 'package.json'));

const sha1 = (text) => createHash('sha1').update(text).digest('hex');
const outputOf = (rel) => join(dist, rel.replace(/\.ts$/, '.js'));

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

const statKey = (st) => `${st.size}:${st.mtimeMs}`;

/**
 * The compiled tree's inputs: every .ts source (not .d.ts) under tsconfig.build.json's `include`, by hash. A file
 * whose size and modification time are those the last start recorded keeps its recorded hash unread (reading and
 * hashing every source was ~70 ms of every start and every CLI command); any other is read and hashed.
 */
function sources(previous) {
  const { include } = readJson(join(root, 'tsconfig.build.json')) ?? {};
  if (!Array.isArray(include)) throw new Error('tsconfig.build.json: no "include" list');
  const files = new Map();
  const stats = new Map();
  for (const dir of include) {
    for (const entry of readdirSync(join(root, dir), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const rel = relative(root, join(entry.parentPath, entry.name));
      const key = statKey(statSync(join(root, rel)));
      const known = previous?.stats?.[rel] === key ? previous.files?.[rel] : undefined;
      files.set(rel, known ?? sha1(readFileSync(join(root, rel))));
      stats.set(rel, key);
    }
  }
  return { files, stats };
}

/** What the output depends on besides the sources: the compiler settings and version. */
function settingsHash() {
  const read = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
  return sha1(
    [
      read(join(root, 'tsconfig.json')),
      read(join(root, 'tsconfig.build.json')),
      read(join(root, 'node_modules', 'typescript', 'package.json')),
    ].join('\0'),
  );
}

function loadTypeScript() {
  try {
    return require('typescript');
  } catch {
    console.error(
      'Cannot start: dist/ is out of date and TypeScript is not installed. Run `npm install` (or `npm run build`).',
    );
    process.exit(1);
  }
}

function compile(stale) {
  const ts = loadTypeScript();
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  const errors = [];
  for (const rel of stale) {
    const fileName = join(root, rel);
    const out = ts.transpileModule(readFileSync(fileName, 'utf8'), {
      fileName,
      compilerOptions: parsed.options,
      reportDiagnostics: true,
    });
    const syntax = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
    if (syntax.length) {
      errors.push(
        ts.formatDiagnostics(syntax, {
          ...ts.sys,
          getCanonicalFileName: (f) => f,
          getCurrentDirectory: () => root,
          getNewLine: () => '\n',
        }),
      );
      continue;
    }
    writeAtomic(outputOf(rel), out.outputText);
    if (out.sourceMapText !== undefined) writeAtomic(`${outputOf(rel)}.map`, out.sourceMapText);
  }
  return errors;
}

function bringDistUpToDate() {
  const previous = readJson(manifestPath);
  const { files, stats } = sources(previous);
  const settings = settingsHash();
  const known = previous?.settings === settings ? (previous.files ?? {}) : {};
  const stale = [...files]
    .filter(([rel, hash]) => known[rel] !== hash || !existsSync(outputOf(rel)))
    .map(([rel]) => rel);
  const removed = Object.keys(known).filter((rel) => !files.has(rel));
  const manifest = () =>
    JSON.stringify({ settings, files: Object.fromEntries(files), stats: Object.fromEntries(stats) });
  if (stale.length === 0 && removed.length === 0) {
    // Touched but unchanged sources (a checkout, a save without edits): record their new times once.
    if ([...stats].some(([rel, key]) => previous?.stats?.[rel] !== key)) writeAtomic(manifestPath, manifest());
    return;
  }

  const started = Date.now();
  const errors = stale.length ? compile(stale) : [];
  for (const rel of removed) {
    rmSync(outputOf(rel), { force: true });
    rmSync(`${outputOf(rel)}.map`, { force: true });
  }
  if (errors.length) {
    console.error(`Cannot start: the TypeScript sources do not parse.\n${errors.join('')}`);
    process.exit(1);
  }
  writeAtomic(manifestPath, manifest());
  const what = [`${stale.length} file(s) compiled`, ...(removed.length ? [`${removed.length} removed`] : [])];
  console.error(`start: dist/ brought up to date (${what.join(', ')}) in ${Date.now() - started} ms`);
}

/** A copy that carries its source's modification time, so that an unchanged source is known by its stat alone. */
function copyIfChanged(source, target) {
  const from = statSync(source);
  const to = existsSync(target) ? statSync(target) : undefined;
  // utimesSync keeps the modification time to the millisecond only, so the copy's never equals its source's to the
  // nanosecond: compared exactly, both files (the 2 MB schema image, the 0.7 MB contract) were written at every start.
  if (to && to.size === from.size && Math.abs(to.mtimeMs - from.mtimeMs) < 1) return;
  writeAtomic(target, readFileSync(source));
  utimesSync(target, from.atime, from.mtime);
}

/** The contract beside the compiled code, where src/spec.ts looks for it (as in the Docker image). */
function copySpec() {
  copyIfChanged(join(root, 'openapi.yaml'), join(dist, 'openapi.yaml'));
}

/** The schema image beside the compiled db/schema-image.js, where it looks for it (db/image/ in dist/). */
function copySchemaImage() {
  const from = join(root, 'db', 'image');
  if (!existsSync(from)) return;
  for (const name of readdirSync(from)) copyIfChanged(join(from, name), join(dist, 'db', 'image', name));
}

/**
 * The entry points run as one file each (dist/bundle/<name>.js), bundled by esbuild from the compiled tree with the
 * packages they use. Node resolving, reading and linking ~900 modules one by one (kysely alone is ~200 ES modules) was
 * ~200 ms of CPU of every start and every CLI command; a bundle is one read and one compile (kept by the compile cache).
 * Left outside: PGlite (it loads its WebAssembly and data files beside its own module), argon2 (a native addon),
 * pg's optional native binding, the Redis client (loaded only when REDIS_URL is set), OpenTelemetry's SDK (only
 * when tracing is on) and the packages in `loadedOnUse`: a bundle's source and source map are held in memory whether
 * used or not. `__dirname` of a bundled module of ours keeps meaning its own folder in dist/
 * (src/spec.ts and db/schema-image.ts find openapi.yaml and the schema image through it). Rebuilt when the compiled
 * tree, the installed packages or this script (the build's options) changed (the start manifest, package-lock.json
 * and this file, by hash).
 */
const bundles = {
  server: join('src', 'server.js'),
  worker: join('src', 'worker', 'main.js'),
  cli: join('src', 'ops', 'cli-main.js'),
};
const bundleDir = join(dist, 'bundle');
// OpenTelemetry's SDK, loaded by src/platform/tracing.ts only when tracing is on (the API package stays in).
const tracingSdk = [
  '@opentelemetry/sdk-trace',
  '@opentelemetry/resources',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/core',
  '@opentelemetry/semantic-conventions',
];
// Packages our code requires only where it uses them (src/integrations/stripe/client.ts, src/worker/mail.ts,
// src/spec.ts when the parsed contract is missing): ~1.7 MB of the server's bundle, read and checked at every start
// though none of them runs in it. Outside the bundle, Node loads each from node_modules on its first use.
const loadedOnUse = ['stripe', 'nodemailer', 'yaml'];
const bundleManifestPath = join(bundleDir, '.manifest');
// V8's code of each bundle as it is once its modules have run (codegen/run-bundle.mjs).
const codeCacheDir = join(root, 'node_modules', '.cache', 'bundle-code-cache');
const bundlePath = (name) => join(bundleDir, `${name}.js`);

async function bringBundlesUpToDate() {
  const inputs = sha1(
    [
      readFileSync(manifestPath, 'utf8'),
      readFileSync(join(root, 'package-lock.json'), 'utf8'),
      readFileSync(fileURLToPath(import.meta.url), 'utf8'),
      ...Object.keys(bundles),
    ].join('\n'),
  );
  const current = existsSync(bundleManifestPath) ? readFileSync(bundleManifestPath, 'utf8') : '';
  if (current === inputs && Object.keys(bundles).every((name) => existsSync(bundlePath(name)))) return;
  const started = Date.now();
  const esbuild = require('esbuild');
  const ours = join(dist, '/');
  const result = await esbuild.build({
    entryPoints: Object.fromEntries(Object.entries(bundles).map(([name, rel]) => [name, join(dist, rel)])),
    outdir: bundleDir,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'error',
    // A require.resolve of a bundled package still finds it in node_modules at run time, which is what it is for.
    logOverride: { 'require-resolve-not-external': 'silent' },
    external: [
      '@electric-sql/pglite',
      '@electric-sql/pglite/*',
      'argon2',
      'pg-native',
      'redis',
      '@redis/*',
      ...tracingSdk,
      ...loadedOnUse,
    ],
    // Every start reads its bundle and decodes it: without indentation and line breaks (and without `loadedOnUse`)
    // the server's went from 7.2 to 3.8 MB. Names are kept (stack traces and logs show them), and the source map
    // still leads each frame to its TypeScript line.
    minifyWhitespace: true,
    plugins: [
      {
        name: 'own-dirname',
        setup(build) {
          build.onLoad({ filter: /\.js$/ }, (args) => {
            if (!args.path.startsWith(ours)) return undefined;
            const text = readFileSync(args.path, 'utf8');
            if (!text.includes('__dirname')) return undefined;
            const folder = JSON.stringify(relative(bundleDir, dirname(args.path)));
            return {
              contents: text.replace(/\b__dirname\b/g, `require('node:path').join(__dirname, ${folder})`),
              loader: 'js',
              resolveDir: dirname(args.path),
            };
          });
        },
      },
    ],
  });
  // esbuild builds in a service process it keeps for a next call: there is none, and left running it stayed a child of
  // the server for the server's whole life. (A failed build ends this process, and the service with it.)
  await esbuild.stop();
  for (const file of result.outputFiles) writeAtomic(file.path, file.contents);
  writeAtomic(bundleManifestPath, inputs);
  console.error(`start: dist/bundle/ rebuilt in ${Date.now() - started} ms`);
}

// This script's own options come before `--cli`; everything after it is the CLI's.
const cliAt = process.argv.indexOf('--cli');
const options = process.argv.slice(2, cliAt < 0 ? undefined : cliAt);

// The Docker image ships dist/ as its build stage made it, without the sources or the tools that compile them
// (TypeScript, esbuild: development dependencies): there, dist/ is what runs.
const prebuilt = !existsSync(join(root, 'tsconfig.build.json'));
if (!prebuilt) {
  bringDistUpToDate();
  copySpec();
  copySchemaImage();
  await bringBundlesUpToDate();
} else if (!Object.keys(bundles).every((name) => existsSync(bundlePath(name)))) {
  console.error('Cannot start: there are no sources here and dist/bundle/ is incomplete (see the Dockerfile).');
  process.exit(1);
}
if (options.includes('--compile-only')) {
  // Also the parsed contract beside it (src/spec.ts writes openapi.yaml.cache on its first load from dist/).
  require(join(dist, 'src', 'spec.js')).specJson();
} else {
  // V8's compiled code of every module, kept between starts (node_modules/.cache is where tools keep caches).
  enableCompileCache(join(root, 'node_modules', '.cache', 'node-compile-cache'));
  // Stack traces name the TypeScript lines, as under tsx; each bundle's map is read on its first stack trace.
  mapStackTraces(Object.keys(bundles).map(bundlePath));
  if (cliAt >= 0) runBundle(bundlePath('cli'), codeCacheDir).main(process.argv.slice(cliAt + 1));
  else runBundle(bundlePath(options.includes('--worker') ? 'worker' : 'server'), codeCacheDir);
}
