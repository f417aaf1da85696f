// The contract dereferenced in place must be what openapi-backend's quick mode made of it (dereference-json-schema's
// dereferenceSync, the package openapi-backend itself loads): the same values, the same shared nodes, the same
// cycles; only the copy is gone.
import { createRequire } from 'node:module';
import { dereferenceInPlace } from '../../src/http/dereference';
import { loadSpec } from '../../src/spec';

const { dereferenceSync } = createRequire(require.resolve('openapi-backend'))('dereference-json-schema') as {
  dereferenceSync<T>(schema: T): T;
};

/** Every node reachable from `root` by path, each first reached once: where structure is shared, the paths meet. */
function shape(root: unknown): { values: string[]; sharing: string[] } {
  const seen = new Map<object, string>();
  const values: string[] = [];
  const sharing: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (typeof node !== 'object' || node === null) return void values.push(`${path}=${JSON.stringify(node)}`);
    const first = seen.get(node);
    if (first !== undefined) return void sharing.push(`${path} -> ${first}`);
    seen.set(node, path);
    values.push(`${path}:${Array.isArray(node) ? 'array' : 'object'}`);
    for (const [key, value] of Object.entries(node)) walk(value, `${path}/${key}`);
  };
  walk(root, '#');
  return { values, sharing };
}

test('the contract: the same graph as dereferenceSync, with no $ref left', () => {
  const theirs = dereferenceSync(loadSpec());
  const input = loadSpec();
  const ours = dereferenceInPlace(input);
  expect(ours).toBe(input); // in place: no copy
  const a = shape(ours);
  const b = shape(theirs);
  expect(a.values).toEqual(b.values);
  expect(a.sharing).toEqual(b.sharing);
  expect(a.sharing.length).toBeGreaterThan(100); // the contract's components are shared, not copied
  expect(JSON.stringify(a.values)).not.toContain('/$ref');
});

test('cycles, references to references, and dangling pointers as dereferenceSync treats them', () => {
  const make = () => ({
    components: {
      schemas: {
        Node: { type: 'object', properties: { child: { $ref: '#/components/schemas/Node' } } },
        Alias: { $ref: '#/components/schemas/Node', description: 'siblings are dropped' },
        Missing: { $ref: '#/components/schemas/Nope' },
      },
    },
    paths: { a: { schema: { $ref: '#/components/schemas/Alias' } }, b: [{ $ref: '#/components/schemas/Node' }] },
    notRefs: { $ref: 7, text: '$ref' },
  });
  const theirs = dereferenceSync(make()) as ReturnType<typeof make>;
  const ours = dereferenceInPlace(make());
  expect(shape(ours)).toEqual(shape(theirs));
  const node = ours.components.schemas.Node as unknown as { properties: { child: unknown } };
  expect(node.properties.child).toBe(node); // the cycle is kept, not unrolled
  expect(ours.components.schemas.Missing).toBeNull();
  expect(ours.notRefs).toEqual({ $ref: 7, text: '$ref' });
});

// src/http/api.ts runs openapi-backend 5.21's quick-mode init itself (to dereference in place): an upgrade must be
// read against it, for a step a later init adds would be missed without a word.
test('openapi-backend is the version whose init src/http/api.ts follows', () => {
  const { version } = require('openapi-backend/package.json') as { version: string };
  expect(version).toMatch(/^5\.21\./);
});
