// The contract, loaded once per process: openapi.yaml parsed into a plain object.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const specPath = join(__dirname, '..', 'openapi.yaml');

export interface SpecDocument {
  openapi: string;
  info: { version: string };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked as untyped JSON
  paths: Record<string, Record<string, any>>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- idem
  components: Record<string, any>;
  security?: Record<string, string[]>[];
  [key: string]: unknown;
}

let cached: SpecDocument | undefined;

/** Returns a fresh deep copy each call after the first parse, so callers may mutate (openapi-backend dereferences in place). */
export function loadSpec(): SpecDocument {
  if (!cached) cached = parse(readFileSync(specPath, 'utf8')) as SpecDocument;
  return structuredClone(cached);
}

export function specText(): string {
  return readFileSync(specPath, 'utf8');
}
