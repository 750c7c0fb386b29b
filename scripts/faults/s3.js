'use strict';
// s3rver, the harness's stand-in for MinIO, in a process of its own: under aborted uploads it can
// emit an error nobody listens to (a temporary file gone before its write stream opened), which
// would end the harness. Here such an error is logged and the server goes on.
// Used by scripts/faults and scripts/image/kube.sh.
const fs = require('node:fs');
const S3rver = require('s3rver');
const FilesystemStore = require('s3rver/lib/stores/filesystem');

// s3rver removes a folder it finds empty after deleting an object, while another request may
// have just made that folder to write into it (its file not yet open): that write fails with
// ENOENT, on a stream nobody listens to. The folders are kept instead (a listing reads object
// files only, so an empty folder is invisible).
FilesystemStore.prototype.deleteObject = async function deleteObject(bucket, key) {
  for (const kind of ['object', 'object.md5', 'metadata.json']) {
    await fs.promises.unlink(this.getResourcePath(bucket, key, kind)).catch((err) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
};

const [dir, port] = process.argv.slice(2);
process.on('uncaughtException', (err) => console.error(`s3rver: ${err.message}`));
new S3rver({ port: Number(port), address: '127.0.0.1', silent: true, directory: dir }).run().then(
  () => process.send?.('ready'),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
