#!/usr/bin/env node
// `npm start`: builds when needed (tsc -b is incremental), then runs the whole platform in this
// process with tracing loaded first. SVC_SERVICE picks one service instead of all.
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
execFileSync(process.execPath, [path.join(root, 'scripts/codegen.js')], { cwd: root, stdio: 'inherit' });
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
require(path.join(root, 'packages/kit/dist/tracing/register.js'));
require(path.join(root, 'packages/stack/dist/main.js'));
