// Lint (run by `npm test`, after the build): ESLint's and typescript-eslint's recommended rules, with
// type information for the rules that need it (a promise nobody awaits or handles, an await of a
// non-promise), sorted imports, type-only imports marked as such, no import of another package's
// build output (`@svc/x/dist/...`), and no file over 500 lines. Formatting is Prettier's.
import js from '@eslint/js';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'packages/proto/gen/**',
      'coverage/**',
      '.data/**',
      '.bench/**',
      'sdk/**',
      'packages/sdk-ts/src/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: ['./tsconfig.eslint.json'], tsconfigRootDir: import.meta.dirname } },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      // Type-aware: a promise nobody awaits or handles is a lost error.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      'simple-import-sort/imports': ['error', { groups: [['^node:'], ['^@?\\w'], ['^@svc/'], ['^\\.']] }],
      'simple-import-sort/exports': 'error',
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@svc/*/dist', '@svc/*/dist/**'], message: 'Import from the package itself, not from its build output.' }] },
      ],
      // No `any`: a value of unknown shape is `unknown`, narrowed where it is read (generated code is ignored above).
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Control characters in regexes are deliberate here: input is checked for them.
      'no-control-regex': 'off',
      // Files stay readable: a module of a few hundred lines; past 500, split it.
      'max-lines': ['error', { max: 500, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Tests still read answers as `any` (about 560 places): not yet held to the rule above.
    files: ['test/**/*.ts', '**/test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
        __filename: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        AbortSignal: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
