/** Tests are TypeScript, transpiled by SWC; they import the workspaces' built dist/ (npm test builds first). */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
    // The TypeScript SDK is an ES module package: its build is turned into CommonJS for jest's runtime.
    '^.+/packages/sdk-ts/dist/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  testMatch: [
    '<rootDir>/packages/*/test/**/*.test.ts',
    '<rootDir>/services/*/test/**/*.test.ts',
    '<rootDir>/apps/*/test/**/*.test.ts',
    '<rootDir>/test/**/*.test.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  testTimeout: 30_000,
  maxWorkers: 2,
};
