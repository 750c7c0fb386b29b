'use strict';
// s3rver, the harness's stand-in for MinIO, in a process of its own: under aborted uploads it can
// emit an error nobody listens to (a temporary file gone before its write stream opened), which
// would end the harness. Here such an error is logged and the server goes on.
const S3rver = require('s3rver');

const [dir, port] = process.argv.slice(2);
process.on('uncaughtException', (err) => console.error(`s3rver: ${err.message}`));
new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory: dir }).run().then(
  () => process.send?.('ready'),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
