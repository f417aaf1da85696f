// The house's time rule (docs/architecture.md, "One write context"): below the entry points nothing reads the wall
// clock or falls back to it; time comes from the clock an entry point chose (a ManualClock in tests). A default
// like `now = new Date()` is how a forgotten clock hides, so every reading of the wall clock outside the places
// below fails this test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(__dirname, '../..');

/** Where the wall clock may be read, each with why. */
const allowed: Record<string, string> = {
  'src/platform/clock.ts': 'the system clock itself',
  'src/server.ts': 'an entry point: it chooses the system clock (and times its own start-up)',
  'src/worker/main.ts': 'an entry point (npm run worker)',
  'src/ops/cli.ts': 'an entry point (npm run cli)',
  'src/auth/authenticate.ts': "a per-process throttle of last_used_at writes (no rule's time)",
  'src/ids.ts': "a UUIDv7's timestamp is when the id was minted (no rule's time), as the uuid package read it",
};

function tsFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return path === 'src/generated' ? [] : tsFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** `systemClock`, `Date.now()` and an argument-less `new Date()` in the code of `text` (comments and strings not). */
export function wallClockReads(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === 'systemClock') found.push(`${at(node)} systemClock`);
    if (ts.isNewExpression(node) && node.expression.getText() === 'Date' && (node.arguments?.length ?? 0) === 0)
      found.push(`${at(node)} new Date()`);
    if (ts.isCallExpression(node) && node.expression.getText() === 'Date.now') found.push(`${at(node)} Date.now()`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('no code below the entry points reads the wall clock or defaults to it', () => {
  const reads = ['src', 'handlers', 'db']
    .flatMap(tsFiles)
    .filter((file) => !(file in allowed))
    .flatMap((file) => wallClockReads(file, readFileSync(join(root, file), 'utf8')));
  expect(reads).toEqual([]);
});

test('the check finds each way of reading the wall clock, and not a time that is given', () => {
  const text = [
    "import { systemClock } from './clock';",
    'export function f(now: Date = new Date()) {',
    '  // new Date() in a comment is no reading',
    "  return [Date.now(), new Date(0), new Date(now), 'Date.now()'];",
    '}',
  ].join('\n');
  expect(wallClockReads('x.ts', text)).toEqual(['x.ts:1 systemClock', 'x.ts:2 new Date()', 'x.ts:4 Date.now()']);
});
