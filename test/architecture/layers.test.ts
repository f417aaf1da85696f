// The house's first rule (../shared/DESIGN.md section 2, docs/architecture.md): imports only go down. Every relative
// import (static, type-only, re-export, dynamic, require) of every .ts file under src/, handlers/ and db/ is resolved,
// each file is given a layer by its path, and any import that reaches a higher layer is listed.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(__dirname, '../..');

// Top to bottom. A file belongs to the first entry whose path it equals or lies under.
const layers: Array<[name: string, paths: string[]]> = [
  ['entry points', ['src/server.ts', 'src/app.ts', 'src/migrate.ts']],
  ['handlers, pages, worker, ops', ['handlers', 'src/worker', 'src/ops', 'src/pages']],
  ['domain', ['src/domain']],
  // The request pipeline authenticates (src/http/api.ts calls src/auth): credentials, scopes and grants know no HTTP.
  ['http', ['src/http']],
  ['auth', ['src/auth']],
  ['views, mail, config', ['src/views', 'src/mail', 'src/config.ts']],
  // Outbound adapters (payment gateways): they speak a provider's API with platform helpers, and know no domain.
  ['integrations', ['src/integrations']],
  ['platform', ['src/platform']],
  ['db and leaves', ['db', 'src/errors.ts', 'src/ids.ts', 'src/logger.ts', 'src/spec.ts', 'src/generated']],
];
// Below in the list yet still out of bounds: the domain states rules, the http layer speaks HTTP about them.
const forbidden: Array<[from: string, to: string]> = [['domain', 'http']];

function layerOf(file: string): number {
  const index = layers.findIndex(([, paths]) => paths.some((p) => file === p || file.startsWith(`${p}/`)));
  if (index < 0) throw new Error(`${file} has no layer: add its folder to the list above`);
  return index;
}

function tsFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function resolveImport(from: string, specifier: string): string | undefined {
  const base = join(dirname(join(root, from)), specifier.replace(/\.js$/, ''));
  const found = [`${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p));
  return found && relative(root, found).split('\\').join('/');
}

interface Import {
  from: string;
  to: string;
}

/** Every relative import between .ts files of src/, handlers/ and db/, resolved to the file it names. */
export function importGraph(): Import[] {
  const edges: Import[] = [];
  for (const from of ['src', 'handlers', 'db'].flatMap(tsFiles)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(root, from), 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = resolveImport(from, fileName);
      if (to) edges.push({ from, to }); // JSON, YAML and other assets carry no code
    }
  }
  return edges;
}

export function upwardImports(edges: Import[]): string[] {
  return edges.flatMap(({ from, to }) => {
    const [a, b] = [layerOf(from), layerOf(to)];
    const banned = forbidden.some(([x, y]) => layers[a]![0] === x && layers[b]![0] === y);
    return b < a || banned ? [`${from} (${layers[a]![0]}) -> ${to} (${layers[b]![0]})`] : [];
  });
}

test('no file imports from a layer above its own', () => {
  expect(upwardImports(importGraph())).toEqual([]);
});

test('the check sees the imports and would refuse one that runs back up', () => {
  const edges = importGraph();
  expect(edges.length).toBeGreaterThan(1000);
  expect(edges).toContainEqual({ from: 'src/http/api.ts', to: 'src/auth/authenticate.ts' });
  expect(edges).toContainEqual({ from: 'db/queries/order-pages.ts', to: 'db/queries/order-columns.ts' });
  expect(
    upwardImports([
      { from: 'src/platform/events.ts', to: 'src/domain/store/bot-notifications.ts' },
      { from: 'src/domain/themes/bases.ts', to: 'src/http/errors.ts' },
      { from: 'src/domain/themes/themes.ts', to: 'src/auth/scopes.ts' },
    ]),
  ).toEqual([
    'src/platform/events.ts (platform) -> src/domain/store/bot-notifications.ts (domain)',
    'src/domain/themes/bases.ts (domain) -> src/http/errors.ts (http)',
  ]);
});

/** The business area of a domain file (`src/domain/<area>/…`); the files at the domain's root wire areas together. */
const areaOf = (file: string) => (/^src\/domain\/([^/]+)\//.exec(file) ?? [])[1] ?? file;

/** Every cycle between business areas: area A reaches B through the imports, and B reaches A. */
export function areaCycles(edges: Import[]): string[] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!from.startsWith('src/domain/') || !to.startsWith('src/domain/')) continue;
    const [a, b] = [areaOf(from), areaOf(to)];
    if (a !== b) next.set(a, (next.get(a) ?? new Set()).add(b));
  }
  const reaches = (a: string, b: string, seen = new Set<string>()): boolean =>
    [...(next.get(a) ?? [])].some((n) => n === b || (!seen.has(n) && seen.add(n) && reaches(n, b, seen)));
  return [...next.keys()].flatMap((a) => [...next.get(a)!].filter((b) => reaches(b, a)).map((b) => `${a} <-> ${b}`));
}

// The areas are floors of their own: an order stands on the catalog, customers and licenses, never the other way,
// so "what does an order completion touch" has one direction to read in.
test('no two business areas of the domain import each other, directly or around a loop', () => {
  expect(areaCycles(importGraph())).toEqual([]);
});

test('the area check would refuse a loop', () => {
  expect(
    areaCycles([
      { from: 'src/domain/orders/create-order.ts', to: 'src/domain/catalog/coupons.ts' },
      { from: 'src/domain/catalog/coupons.ts', to: 'src/domain/subscriptions/billing.ts' },
      { from: 'src/domain/subscriptions/start.ts', to: 'src/domain/orders/pricing.ts' },
      { from: 'src/domain/customers/wallets.ts', to: 'src/domain/catalog/pricing.ts' },
    ]),
  ).toEqual(['orders <-> catalog', 'catalog <-> subscriptions', 'subscriptions <-> orders']);
});
