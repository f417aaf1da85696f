// Jest test runner for `npm run mutation` only (stryker.config.json): jest's own in-band runner, file by file, except
// that once a test has failed for the active mutant (environment.js notes it) the remaining files are not even
// loaded: each gets one skipped placeholder result. A killed mutant needs no more tests.
const process = require('node:process');
const { createEmptyTestResult } = require('@jest/test-result');
const TestRunner = require('jest-runner').default;

const killed = () =>
  process.env.__STRYKER_ACTIVE_MUTANT__ !== undefined &&
  process.env.__STRYKER_KILLED_MUTANT__ === process.env.__STRYKER_ACTIVE_MUTANT__;

function skipped(test) {
  return {
    ...createEmptyTestResult(),
    testFilePath: test.path,
    numPendingTests: 1,
    testResults: [
      {
        ancestorTitles: [],
        duration: 0,
        failureDetails: [],
        failureMessages: [],
        fullName: 'not run: the mutant was already killed',
        location: null,
        numPassingAsserts: 0,
        status: 'pending',
        title: 'not run: the mutant was already killed',
      },
    ],
  };
}

class BailingRunner extends TestRunner {
  #listeners = new Map();

  on(eventName, listener) {
    if (!this.#listeners.has(eventName)) this.#listeners.set(eventName, []);
    this.#listeners.get(eventName).push(listener);
    return super.on(eventName, listener);
  }

  async #emit(eventName, payload) {
    for (const listener of this.#listeners.get(eventName) || []) await listener(payload);
  }

  async runTests(tests, watcher, options) {
    if (!options.serial) return super.runTests(tests, watcher, options);
    for (const test of tests) {
      if (watcher.isInterrupted()) return;
      if (killed()) {
        await this.#emit('test-file-start', [test]);
        await this.#emit('test-file-success', [test, skipped(test)]);
      } else {
        await super.runTests([test], watcher, options);
      }
    }
  }
}

module.exports = BailingRunner;
