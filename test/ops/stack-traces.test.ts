// npm start's bundles report errors at their TypeScript lines (codegen/stack-traces.mjs), the source map read only
// when a stack trace first needs it. A small bundle built here as start.mjs builds its own (esbuild, a linked map)
// throws from a known line; the trace must name that line of the .ts file, and a frame outside the bundle must be
// left as V8 wrote it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

function stackOf(mapped: boolean): string {
  const script = `
    import { createRequire } from 'node:module';
    import { mapStackTraces } from ${JSON.stringify(join(root, 'codegen', 'stack-traces.mjs'))};
    const bundle = ${JSON.stringify(join(dir, 'bundle.js'))};
    if (${mapped}) mapStackTraces([bundle]);
    try { createRequire(import.meta.url)(bundle).explode({ name: 'a box' }); } catch (err) { console.log(err.stack); }`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

test('a frame of the bundle names the TypeScript line it came from', () => {
  const lines = stackOf(true).trim().split('\n');
  expect(lines[0]).toBe('RangeError: explosion of a box');
  expect(lines[1]).toMatch(
    new RegExp(`^    at (Object\\.)?explode \\(${join(dir, 'thrower.ts').replace(/[.]/g, '\\.')}:4:\\d+\\)$`),
  );
  // The caller (the -e script) is not in a bundle: left as V8 wrote it.
  expect(lines.slice(2).some((l) => l.includes('[eval'))).toBe(true);
  expect(lines.join('\n')).not.toContain('bundle.js');
});

test('without it the same frame names the bundle, so the mapping is what changed it', () => {
  const stack = stackOf(false);
  expect(stack).toContain('bundle.js:');
  expect(stack).not.toContain('thrower.ts');
});
