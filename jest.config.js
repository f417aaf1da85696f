// Tests run TypeScript through ts-jest without type checking (npm run typecheck does that once, faster).
// jest runs with --experimental-vm-modules (see the test script): PGlite loads its parts with dynamic import(),
// and ESM-only packages (kysely, uuid) then load natively, untransformed.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: { isolatedModules: true }, diagnostics: false }],
  },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
