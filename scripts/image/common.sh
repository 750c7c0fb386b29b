# Sourced by scripts/image/build.sh and smoke.sh: settings shared by both.
# shellcheck shell=bash

IMAGE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$IMAGE_DIR/../.." && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$IMAGE_DIR/containers.conf}"

# The image the scripts build and test, and the local stand-in for node:22-slim it is built on.
SVC_IMAGE="${SVC_IMAGE:-localhost/svc:ci}"
NODE_BASE="${NODE_BASE:-localhost/node:22-slim}"
NODE_VERSION="${NODE_VERSION:-22.23.3}" # the Node 22 that .ci/run tests with
NPM_VERSION="${NPM_VERSION:-10}"
NODE_LABEL="org.svc.node-version"

log() { echo "image: $*" >&2; }
die() {
  echo "image: $*" >&2
  exit 1
}
