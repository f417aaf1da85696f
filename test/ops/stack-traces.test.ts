// npm start's bundles report errors at their TypeScript lines (codegen/stack-traces.mjs), the source map read only
// when a stack trace first needs it. A small bundle built here as start.mjs builds its own (esbuild, a linked map)
// throws from a known line; the trace must name that line of the .ts file, and a frame outside the bundle must be
// left as V8 wrote it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';

const root = join(__dirname, '..', '..');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-stack-'));
  writeFileSync(
    join(dir, 'thrower.ts'),
    [
      'interface Shape { name: string }',
      'export function explode(shape: Shape): never {',
      '  const detail: string = `of ${shape.name}`;',
      '  throw new RangeError(`explosion ${detail}`);',
      '}',
      '',
    ].join('\n'),
  );
  buildSync({
    entryPoints: [join(dir, 'thrower.ts')],
    outfile: join(dir, 'bundle.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    sourcemap: 'linked',
    sourcesContent: false,
    // Lines of its own before the thrower's, so bundle and source lines differ.
    banner: { js: '// one\n// two\n// three\n// four\n// five' },
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The bundle's stack trace, the bundle loaded by require() or, as start.mjs runs it, by codegen/run-bundle.mjs. */
function stackOf(mapped: boolean, load: 'require' | 'runBundle' = 'require'): string {
  const script = `
    import { createRequire } from 'node:module';
    import { mapStackTraces } from ${JSON.stringify(join(root, 'codegen', 'stack-traces.mjs'))};
    import { runBundle } from ${JSON.stringify(join(root, 'codegen', 'run-bundle.mjs'))};
    const bundle = ${JSON.stringify(join(dir, 'bundle.js'))};
    if (${mapped}) mapStackTraces([bundle]);
    const loaded = ${load === 'require'} ? createRequire(import.meta.url)(bundle) : runBundle(bundle, ${JSON.stringify(join(dir, 'cache'))});
    try { loaded.explode({ name: 'a box' }); } catch (err) { console.log(err.stack); }`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

const cacheFiles = () => {
  try {
    return readdirSync(join(dir, 'cache'));
  } catch {
    return [];
  }
};

test.each(['require', 'runBundle'] as const)(
  'a frame of the bundle names the TypeScript line it came from (%s)',
  (load) => {
    const lines = stackOf(true, load).trim().split('\n');
    expect(lines[0]).toBe('RangeError: explosion of a box');
    expect(lines[1]).toMatch(
      new RegExp(`^    at (Object\\.)?explode \\(${join(dir, 'thrower.ts').replace(/[.]/g, '\\.')}:4:\\d+\\)$`),
    );
    // The caller (the -e script) is not in a bundle: left as V8 wrote it.
    expect(lines.slice(2).some((l) => l.includes('[eval'))).toBe(true);
    expect(lines.join('\n')).not.toContain('bundle.js');
  },
);

test('without it the same frame names the bundle, so the mapping is what changed it', () => {
  const stack = stackOf(false);
  expect(stack).toContain('bundle.js:');
  expect(stack).not.toContain('thrower.ts');
});

test('a bundle run by runBundle keeps its code cache: written once, read by the next run, replaced when it changes', () => {
  rmSync(join(dir, 'cache'), { recursive: true, force: true });
  expect(stackOf(false, 'runBundle')).toContain('bundle.js:');
  const [first, ...more] = cacheFiles();
  expect(first).toMatch(/^bundle-[0-9a-f]{16}\.bin$/);
  expect(more).toEqual([]);
  const written = statSync(join(dir, 'cache', first!)).mtimeMs;
  stackOf(false, 'runBundle');
  // Found and accepted: not written again.
  expect(cacheFiles()).toEqual([first]);
  expect(statSync(join(dir, 'cache', first!)).mtimeMs).toBe(written);
  // A rebuilt bundle (another modification time) gets a cache of its own, and the old one is gone.
  const later = new Date(Date.now() + 5000);
  utimesSync(join(dir, 'bundle.js'), later, later);
  stackOf(false, 'runBundle');
  const [replaced, ...others] = cacheFiles();
  expect(replaced).not.toBe(first);
  expect(others).toEqual([]);
});
