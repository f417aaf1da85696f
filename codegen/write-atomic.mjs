// A file written beside, then renamed over: a process reading it at the same time (another start) never reads half
// of it. Plain JavaScript, loaded by codegen/start.mjs and codegen/run-bundle.mjs.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import process from 'node:process';

export function writeAtomic(path, data) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}
