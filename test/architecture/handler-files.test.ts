// handlers/<tag>.ts pairs one-to-one with the contract's tags, as src/domain does: a reader who finds an operation
// under a tag in the docs opens the file of that tag and finds its handler there, and nowhere else.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { handlers } from '../../handlers';
import { loadSpec } from '../../src/spec';

const spec = loadSpec();
const handlersDir = join(__dirname, '..', '..', 'handlers');
const tags = (spec.tags as { name: string }[]).map((t) => t.name);

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const operationsByTag = new Map<string, string[]>(tags.map((t) => [t, []]));
for (const item of Object.values(spec.paths)) {
  // In the document's order (not a fixed order of methods): the order of the docs.
  for (const [method, value] of Object.entries(item)) {
    if (!methods.includes(method)) continue;
    const op = value as { operationId: string; tags?: string[] };
    // One operation, one home.
    const [tag, ...more] = op.tags ?? [];
    if (tag === undefined || more.length > 0) throw new Error(`${op.operationId} must have exactly one tag`);
    const list = operationsByTag.get(tag);
    if (!list) throw new Error(`${op.operationId} is tagged ${tag}, which the contract's tags do not list`);
    list.push(op.operationId);
  }
}

test('one handler file per tag, and no other besides index.ts and not-implemented.ts', () => {
  const files = readdirSync(handlersDir).sort();
  expect(files).toEqual([...tags.map((t) => `${t}.ts`), 'index.ts', 'not-implemented.ts'].sort());
});

test.each(tags)('handlers/%s.ts exports the handler of every operation of its tag, and nothing else', (tag) => {
  // require, not import(): the module's own exports, without the ESM interop's `default` and `module.exports`.
  const mod = require(join(handlersDir, tag)) as Record<string, unknown>;
  const expected = operationsByTag.get(tag)!;
  expect(expected.length).toBeGreaterThan(0);
  expect(Object.keys(mod).sort()).toEqual([...expected].sort());
  // The map the router uses takes each handler from its tag's file, not from a copy elsewhere.
  for (const operationId of expected) {
    expect(typeof mod[operationId]).toBe('function');
    expect((handlers as Record<string, unknown>)[operationId]).toBe(mod[operationId]);
  }
  // In the order of the contract, so the file reads like its tag's section of the docs.
  const source = readFileSync(join(handlersDir, `${tag}.ts`), 'utf8');
  const declared = [...source.matchAll(/^export const (\w+)/gm)].map((m) => m[1]);
  expect(declared).toEqual(expected);
});
