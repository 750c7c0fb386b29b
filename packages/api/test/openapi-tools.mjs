// Runs the two outside tools on an OpenAPI document read from stdin and prints, as JSON,
// { problems: [{ severity, ruleId, message, pointer }], types: "<openapi-typescript output>" }.
// A separate Node process because both tools are ES modules, which jest's CommonJS runtime cannot load.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';

/**
 * Redocly's `recommended-strict` (its recommended rules, every warning an error), plus checks it
 * leaves off that our document can and should meet. Still off, as in recommended: operation and
 * parameter descriptions (each operation has a one-line summary), examples, global tag objects,
 * RFC 7807 problem+json errors (ours are `{"error": {...}}`) and naming-style rules.
 */
const LINT = {
  extends: ['recommended-strict'],
  rules: {
    // The API is private (the package is UNLICENSED): there is no license to name.
    'info-license': 'off',
    'info-license-strict': 'off',
    // Not in recommended, but true of a document generated from one route table: keep them so.
    'operation-singular-tag': 'error',
    'path-params-defined': 'error',
    'no-invalid-media-type-examples': 'error',
    'no-invalid-schema-examples': 'error',
    'no-invalid-parameter-examples': 'error',
    'spec-strict-refs': 'error',
  },
};

const read = async () => {
  let s = '';
  for await (const chunk of process.stdin) s += chunk;
  return s;
};

const source = await read();
const config = await createConfig(LINT);
const problems = (await lintFromString({ source, absoluteRef: 'openapi.json', config })).map((p) => ({
  severity: p.severity,
  ruleId: p.ruleId,
  message: p.message,
  pointer: p.location?.[0]?.pointer,
}));
const types = astToString(await openapiTS(JSON.parse(source), { silent: true }));
process.stdout.write(JSON.stringify({ problems, types }));
