// A freshly migrated embedded database, shipped in the repository (db/image/): a first start unpacks it into the
// empty data directory instead of running initdb and every migration (most of a first start's seconds), and then
// migrates only what is newer than the image, as any start does. `npm run db:image` (codegen/schema-image.ts) makes
// it; test/db/schema-image.test.ts fails when its schema or migration rows differ from a fresh migration's.
//
// The image is used only when it can be trusted here: made by the installed PGlite release (a data directory is
// tied to its PostgreSQL build) and of migrations this code has, as the first of them in order. Otherwise, or when
// the image is missing or unreadable, the first start runs initdb and every migration, as it did without one.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { untar } from './tar';

export const imageDir = join(__dirname, 'image');
export const imageTarName = 'pgdata.tar.br';
export const imageManifestName = 'manifest.json';
export const REGENERATE = 'npm run db:image';

export interface ImageManifest {
  /** The PGlite release that wrote the image. */
  pglite: string;
  /** The migrations applied in it, in order. */
  migrations: string[];
}

/** The installed PGlite's version (its package.json is not among its exports, so found beside its entry). */
export function installedPGliteVersion(): string {
  let dir = dirname(require.resolve('@electric-sql/pglite'));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite' && pkg.version) return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('@electric-sql/pglite: package.json not found');
    dir = up;
  }
}

/** Why this image cannot seed a database of this code, or undefined when it can. */
export function imageMismatch(manifest: ImageManifest, knownMigrations: string[]): string | undefined {
  const installed = installedPGliteVersion();
  if (manifest.pglite !== installed) return `made by PGlite ${manifest.pglite}, installed is ${installed}`;
  const known = [...knownMigrations].sort(); // the order the migrator applies them in
  const prefix = manifest.migrations.every((name, i) => known[i] === name);
  if (!prefix) return 'its migrations are not the first of this code’s migrations';
  return undefined;
}

export function readManifest(dir = imageDir): ImageManifest | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, imageManifestName), 'utf8')) as ImageManifest;
  } catch {
    return undefined;
  }
}

export type UnpackResult = { unpacked: true; migrations: string[] } | { unpacked: false; reason: string };

/**
 * Fills a new data directory from the image. Unpacked beside it and renamed into place, so an interrupted unpack
 * never leaves a half database where the next start would find one. A directory that already holds anything is
 * left alone (PGlite resumes it, or refuses it).
 */
export function unpackImage(dataDir: string, knownMigrations: string[], dir = imageDir): UnpackResult {
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) return { unpacked: false, reason: 'not empty' };
  const manifest = readManifest(dir);
  if (!manifest) return { unpacked: false, reason: `no image in ${dir}` };
  const mismatch = imageMismatch(manifest, knownMigrations);
  if (mismatch) return { unpacked: false, reason: mismatch };
  const staging = `${dataDir}.unpacking-${process.pid}`;
  try {
    const entries = untar(brotliDecompressSync(readFileSync(join(dir, imageTarName))));
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    for (const entry of entries) {
      const path = join(staging, entry.name);
      if (entry.type === 'dir') mkdirSync(path, { recursive: true, mode: entry.mode & 0o777 });
      else {
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, entry.data, { mode: entry.mode & 0o777 });
      }
    }
    if (existsSync(dataDir)) rmdirSync(dataDir); // empty, checked above
    renameSync(staging, dataDir);
    return { unpacked: true, migrations: manifest.migrations };
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    return { unpacked: false, reason: (err as Error).message };
  }
}
