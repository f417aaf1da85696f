// Jest test sequencer for `npm run mutation` only (stryker.config.json). Stryker runs a mutant's covering tests by
// passing their names as `testNamePattern`; jest would still load every test file to find them, which costs about a
// second per file. This sequencer keeps only the files that hold a test the pattern matches, from the list that
// environment.js wrote during Stryker's initial run. Without a pattern or a list, or when nothing matches, it keeps
// every file, so it can make a run slower but never skip a covering test.
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');
const process = require('node:process');
const Sequencer = require('@jest/test-sequencer').default;

/** Where the initial run's test list goes: the working directory, which is Stryker's sandbox. */
const testFileListPath = () => join(process.cwd(), '.stryker-test-files.jsonl');

let cached; // { size, files: Map<file, names[]> }, re-read when the list grows

function testFiles() {
  const path = testFileListPath();
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  if (cached && cached.size === text.length) return cached.files;
  const files = new Map();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const { file, name } = JSON.parse(line);
    if (!files.has(file)) files.set(file, []);
    files.get(file).push(name);
  }
  cached = { size: text.length, files };
  return files;
}

class CoveringFilesSequencer extends Sequencer {
  constructor(options) {
    super(options);
    this.testNamePattern = options && options.globalConfig ? options.globalConfig.testNamePattern : undefined;
  }

  sort(tests) {
    const files = this.testNamePattern ? testFiles() : undefined;
    if (!files) return super.sort(tests);
    const pattern = new RegExp(this.testNamePattern, 'i'); // as jest-circus matches it
    const share = new Map();
    for (const t of tests) {
      const names = files.get(t.path) || [];
      const covering = names.filter((n) => pattern.test(n)).length;
      if (covering > 0) share.set(t, { covering, total: names.length });
    }
    const kept = tests.filter((t) => share.has(t));
    if (kept.length === 0) return super.sort(tests);
    // The environment bails at the first failing test, so the likeliest and cheapest killers go first: unit tests,
    // then the files most about the mutated code (the largest share of their tests covers it), smaller files first.
    const unit = (t) => (/[\\/]test[\\/]unit[\\/]/.test(t.path) ? 0 : 1);
    const ratio = (t) => share.get(t).covering / share.get(t).total;
    return kept.sort(
      (a, b) =>
        unit(a) - unit(b) ||
        ratio(b) - ratio(a) ||
        share.get(a).total - share.get(b).total ||
        (a.path < b.path ? -1 : 1),
    );
  }
}

module.exports = CoveringFilesSequencer;
module.exports.testFileListPath = testFileListPath;
