// The floor under the embedded starts: a Node process that does nothing but what any embedded start must, open PGlite
// on a data directory and run one query; with `unpack`, first fill the empty directory from the schema image with
// the server's own code (dist/db/schema-image.js, as a first start does). No server, no API. The bench times it from
// spawn to `ready` (test/bench/cold-start.ts) beside the embedded starts it is the floor of.
// Usage: node test/bench/bare-pglite.mjs <dataDir> [unpack]
import console from 'node:console';
import { createRequire } from 'node:module';
import process from 'node:process';

const require = createRequire(import.meta.url);
const [dataDir, mode] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: node test/bench/bare-pglite.mjs <dataDir> [unpack]');
if (mode === 'unpack') {
  const { readManifest, unpackImage } = require('../../dist/db/schema-image.js');
  const result = unpackImage(dataDir, readManifest().migrations);
  if (!result.unpacked) throw new Error(`the schema image was not unpacked: ${result.reason}`);
}
const { PGlite } = require('@electric-sql/pglite');
const pg = new PGlite({ dataDir });
await pg.waitReady;
await pg.query('select 1');
console.log('ready');
await pg.close();
