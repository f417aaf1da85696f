// `npm run db:image`: makes db/image/ (the schema image a first embedded start unpacks, see db/schema-image.ts)
// from a fresh data directory: initdb, every migration, a clean shutdown, then the directory as a tar compressed
// with brotli (about a third of gzip's size; node decompresses it without a dependency). Run it after adding or
// changing a migration or upgrading PGlite; test/db/schema-image.test.ts fails until it is run.
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { brotliCompressSync, constants } from 'node:zlib';
import { createPGlite, wrapPGlite } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import {
  imageDir,
  imageManifestName,
  imageTarName,
  installedPGliteVersion,
  type ImageManifest,
} from '../db/schema-image';
import { tarOf, type TarEntry } from '../db/tar';

function entriesOf(root: string): TarEntry[] {
  const entries: TarEntry[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = statSync(path);
      const rel = relative(root, path).split('\\').join('/');
      if (st.isDirectory()) {
        entries.push({ name: rel, type: 'dir', mode: st.mode, data: new Uint8Array(0) });
        walk(path);
      } else entries.push({ name: rel, type: 'file', mode: st.mode, data: readFileSync(path) });
    }
  };
  walk(root);
  return entries;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'mdapi-image-'));
  try {
    const dataDir = join(work, 'pgdata');
    const handle = wrapPGlite(await createPGlite({ dataDir }));
    const applied = await migrateToLatest(handle.db);
    await handle.close(); // a clean shutdown: the first start finds a checkpointed database, nothing to recover
    const tar = tarOf(entriesOf(dataDir));
    const compressed = brotliCompressSync(tar, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_LGWIN]: 24,
        [constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
      },
    });
    const manifest: ImageManifest = { pglite: installedPGliteVersion(), migrations: applied };
    mkdirSync(imageDir, { recursive: true });
    writeFileSync(join(imageDir, imageTarName), compressed);
    writeFileSync(join(imageDir, imageManifestName), `${JSON.stringify(manifest, null, 2)}\n`);
    const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
    console.log(
      `db/image/${imageTarName}: ${mb(compressed.length)} (${mb(tar.length)} unpacked), PGlite ${manifest.pglite}, ` +
        `${applied.length} migrations (last ${applied.at(-1)})`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
