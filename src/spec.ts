// The contract, loaded once per process: openapi.yaml parsed into a plain object.
// Parsing 550 kB of YAML costs about 0.4 s of a cold start, so compiled code (dist/, run by `npm start` and the
// Docker image) keeps the parsed document as JSON beside the YAML (`openapi.yaml.cache`: the YAML's SHA-256 on the
// first line, the document as JSON after it). The cache is used only when that hash is the hash of the YAML read
// now, so it can never serve a stale contract; when it is missing or stale the YAML is parsed and, in dist/, the
// cache rewritten. Running from source (tsx, jest) never writes one: the repository root stays clean.
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { parse } from 'yaml';

export const specPath = join(__dirname, '..', 'openapi.yaml');
export const specCachePath = `${specPath}.cache`;

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

let yamlText: string | undefined;
let jsonText: string | undefined;

/** The YAML as published (`/openapi.yaml`). */
export function specText(): string {
  return (yamlText ??= readFileSync(specPath, 'utf8'));
}

/** The document as compact JSON (`/openapi.json`), from the cache when it matches the YAML. */
export function specJson(): string {
  if (jsonText !== undefined) return jsonText;
  const yaml = specText();
  const hash = createHash('sha256').update(yaml).digest('hex');
  try {
    const cached = readFileSync(specCachePath, 'utf8');
    const newline = cached.indexOf('\n');
    if (cached.slice(0, newline) === hash) return (jsonText = cached.slice(newline + 1));
  } catch {
    // no cache: parse below
  }
  // The YAML parser (~0.26 MB of code) is loaded only when there is no cache to read.
  jsonText = JSON.stringify((require('yaml') as { parse: typeof parse }).parse(yaml));
  if (__filename.endsWith('.js')) writeCache(`${hash}\n${jsonText}`);
  return jsonText;
}

/** Best effort: where dist/ is read-only the YAML is parsed at each start (the Dockerfile writes the cache at build). */
function writeCache(content: string): void {
  const tmp = `${specCachePath}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, specCachePath);
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // not writable at all: fine
    }
  }
}

/** A fresh copy on every call, so callers may mutate it (openapi-backend dereferences in place). */
export function loadSpec(): SpecDocument {
  return JSON.parse(specJson()) as SpecDocument;
}
