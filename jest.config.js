// Tests run TypeScript through ts-jest without type checking (npm run typecheck does that once, faster).
// kysely is ESM-only, so it is transformed to CommonJS for jest's module system.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true }, diagnostics: false }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(kysely)/)'],
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
