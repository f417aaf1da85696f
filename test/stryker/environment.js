// Jest test environment for `npm run mutation` only (stryker.config.json): jest-environment-node plus two things
// Stryker's jest runner cannot do itself.
//  - During the initial run it records which test file holds each test (by the full name Stryker gives it), so the
//    sequencer beside it loads only the files of a mutant's covering tests.
//  - During a mutant's run it bails at the first failing test, as Stryker does with other runners: the mutant is
//    already killed, so the tests after it (and the hooks of files that have no test left) are skipped, and
//    runner.js does not load the files after it.
const { appendFileSync } = require('node:fs');
const process = require('node:process');
const { TestEnvironment } = require('jest-environment-node');
const { testFileListPath } = require('./sequencer');

/** The name Stryker's jest runner gives a test: its describe blocks and its own name, space-separated. */
function fullName(test) {
  const names = [test.name];
  for (let block = test.parent; block && block.parent; block = block.parent) names.unshift(block.name);
  return names.join(' ').trimStart();
}

function skipAll(block) {
  block.mode = 'skip';
  for (const child of block.children) {
    if (child.type === 'describeBlock') skipAll(child);
    else child.mode = 'skip';
  }
}

/** The mutant whose run has seen a failing test (module state: it outlives one test file's environment). */
let killedMutant;

class StrykerEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    const testPath = context.testPath;
    // A property, not a method: Stryker's mixin calls the function it finds here before its own handler.
    this.handleTestEvent = (event, state) => {
      const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;
      if (mutant === undefined) {
        if (event.name === 'test_start') {
          appendFileSync(testFileListPath(), `${JSON.stringify({ file: testPath, name: fullName(event.test) })}\n`);
        }
        return;
      }
      const killed = killedMutant === mutant;
      if (event.name === 'run_start' && killed) skipAll(state.rootDescribeBlock);
      else if (event.name === 'test_start' && killed) event.test.mode = 'skip';
      else if (event.name === 'test_done' && event.test.errors.length > 0) {
        killedMutant = mutant;
        process.env.__STRYKER_KILLED_MUTANT__ = mutant; // for runner.js
      }
    };
  }
}

module.exports = StrykerEnvironment;
