// A bundle run as require() runs it, with V8's code cache of the bundle as it is once its modules have run.
// Node's compile cache (enableCompileCache) keeps the code V8 compiled before the bundle ran: the top level only,
// for a bundle's functions are compiled when first called, so every start compiled again each module's body and
// everything its start called (~50 ms of a PostgreSQL start of the server, measured with --cpu-prof). Here the
// cache is taken from a start that found none (or found it refused), once the bundle's top level has run, when it
// holds every module body and whatever else ran; later starts read it back and compile none of them.
// Plain JavaScript, loaded by codegen/start.mjs.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import process from 'node:process';
import { setImmediate } from 'node:timers';
import vm from 'node:vm';
import { writeAtomic } from './write-atomic.mjs';

/**
 * Runs the CommonJS bundle `filename` and returns its exports, its code cache kept in `cacheDir`. The cache's name
 * carries the bundle's size and modification time (a rebuild writes a new bundle), Node's version and its flags;
 * V8 refuses a cache that does not fit its source or its flags, and a refused one is replaced.
 */
export function runBundle(filename, cacheDir) {
  const source = readFileSync(filename, 'utf8');
  const stat = statSync(filename);
  const key = [stat.size, stat.mtimeMs, process.version, process.arch, ...process.execArgv].join('\0');
  const prefix = `${basename(filename, '.js')}-`;
  const cacheFile = join(cacheDir, `${prefix}${createHash('sha1').update(key).digest('hex').slice(0, 16)}.bin`);
  let cachedData;
  try {
    cachedData = readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  // The wrapper on a line of its own, taken back by lineOffset: the bundle's lines and columns stay those its source
  // map knows (codegen/stack-traces.mjs).
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {\n${source}\n})`, {
    filename,
    lineOffset: -1,
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (!cachedData || script.cachedDataRejected) {
    let saved = false;
    const save = () => {
      if (saved) return;
      saved = true;
      try {
        mkdirSync(cacheDir, { recursive: true });
        for (const old of readdirSync(cacheDir))
          if (old.startsWith(prefix)) rmSync(join(cacheDir, old), { force: true });
        writeAtomic(cacheFile, script.createCachedData());
      } catch {
        // A cache that cannot be written (a read-only node_modules) only makes the next start compile again.
      }
    };
    // Taken as soon as the bundle's top level has run (every module's body, the bulk of a start's compiling), not
    // later: V8 drops the compiled code of functions that have not run for a while, and module bodies run once.
    // Taken 5 s into a start (an embedded one, busy opening PGlite), the cache left a PostgreSQL start at 263-307
    // ms; taken here, 228-237 ms.
    setImmediate(save);
  }
  const module = new Module(filename, null);
  module.filename = filename;
  module.paths = Module._nodeModulePaths(dirname(filename));
  Module._cache[filename] = module;
  script.runInThisContext()(module.exports, createRequire(filename), module, filename, dirname(filename));
  module.loaded = true;
  return module.exports;
}
