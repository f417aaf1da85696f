// Scope rules: `*` is full access; otherwise every scope the operation names is needed, each exactly (no scope
// implies another).
import { operations } from '../generated/operations';

export const fullAccessScope = '*';

export function hasScope(granted: readonly string[], needed: readonly string[]): boolean {
  if (needed.length === 0 || granted.includes(fullAccessScope)) return true;
  return needed.every((s) => granted.includes(s));
}

/** Every scope the contract names, from the generated operation table. */
export const knownScopes: readonly string[] = [
  ...new Set(Object.values(operations).flatMap((op) => op.scopes as readonly string[])),
].sort();

/** Resource groups reachable with the given action (`read`/`write`), from the scopes held. */
export function resourceGroups(granted: readonly string[], action: 'read' | 'write'): string[] {
  const pool = granted.includes(fullAccessScope) ? knownScopes : granted;
  const groups = pool.filter((s) => s.endsWith(`.${action}`)).map((s) => s.slice(0, -action.length - 1));
  return [...new Set(groups)].sort();
}

/** Scope syntax: `resource.action` or `*`. */
export const scopePattern = /^(\*|[a-z][a-z_]*\.(read|write))$/;
