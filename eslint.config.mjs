import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules',
      'dist',
      'data',
      'coverage',
      'reports',
      '.stryker-tmp',
      'src/generated',
      'sdk/src/generated',
      'sdk/dist',
    ],
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // Tests and codegen walk untyped JSON (responses, the spec document).
    files: ['test/**/*.ts', 'codegen/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The house rule of DESIGN.md: handlers never touch SQL.
    files: ['handlers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['kysely', 'pg', '*/db/database*'] }] },
  },
);
