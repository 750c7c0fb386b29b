#!/usr/bin/env bash
# Runs the chart's workloads with `podman kube play` on this machine and checks them from outside
# (docs/deploy.md#the-charts-workloads-on-podman):
#   1. renders charts/svc with charts/svc/ci/podman-values.yaml (the host's PostgreSQL, Redis and
#      NATS; S3 from an s3rver on loopback; a fresh database and namespace) and validates every
#      object by schema (the shared check-chart);
#   2. plays each Deployment's pod template as a Pod (same image, command, env, probes, security
#      context; the host's network, each pod on its own loopback address), one container per
#      service, with the Services, probes and preStop/SIGTERM handled as a cluster would
#      (scripts/image/kube/cluster.mjs); runs the migration Jobs;
#   3. checks through the gateway's Service: GET /v1/ready, GET /v1/me (gateway -> keys ->
#      accounts -> SQL), a thread the runtime answers, a drive upload read back;
#   4. with --roll (two replicas each): a rolling restart of every service in turn under a steady
#      mixed load, counting failed requests and acknowledged writes lost.
# Usage: scripts/image/kube.sh [--roll] [--replicas N]. Needs the image (scripts/image/build.sh)
# and `npm ci` (pg, nats, yaml, s3rver, @grpc/grpc-js on the host). Every pod, podman secret,
# database and NATS stream of the run is removed on exit, failed or not.
set -euo pipefail
# shellcheck source=scripts/image/common.sh
. "$(dirname "$0")/common.sh"
cd "$ROOT"

command -v podman >/dev/null || die "kube: podman is missing (scripts/image/build.sh installs it)"
# podman's pods need an init for their infra container.
if ! command -v catatonit >/dev/null; then
  log "kube: installing catatonit (apt)"
  apt-get install -y -q catatonit >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q catatonit >/dev/null; } \
    || die "kube: could not install catatonit"
fi
podman image exists "$SVC_IMAGE" || die "kube: no image $SVC_IMAGE (run scripts/image/build.sh)"
[ -d node_modules/s3rver ] || die "kube: run npm ci first (the script uses pg, nats, yaml, s3rver from node_modules)"

export KUBE_RUN_ID="${KUBE_RUN_ID:-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')}"
export SVC_IMAGE
export CHECK_CHART="${HELM_RENDER_CHECK_CHART:-$ROOT/../shared/tools/helm-render/check-chart}"
[ -x "$CHECK_CHART" ] || CHECK_CHART=/work/shared/tools/helm-render/check-chart
export DATABASE_URL="${KUBE_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
release="kp$KUBE_RUN_ID"
KUBE_DIR="$(mktemp -d)"
export KUBE_DIR

# The program removes what it made; this is for when it could not (killed, or a crash).
cleanup() {
  local rc=$?
  podman pod ls -q --filter "label=svc.dev/kube-run=$KUBE_RUN_ID" | xargs -r podman pod rm -f -t 0 >/dev/null 2>&1 || true
  podman secret ls --format '{{.Name}}' | grep "^$release-" | xargs -r podman secret rm >/dev/null 2>&1 || true
  node scripts/image/backends.cjs drop-db "$DATABASE_URL" "svc_kube_$KUBE_RUN_ID" 2>/dev/null || true
  node scripts/image/backends.cjs drop-stream "${NATS_URL:-nats://127.0.0.1:4222}" "$release" 2>/dev/null || true
  rm -rf "$KUBE_DIR"
  exit "$rc"
}
trap cleanup EXIT

node scripts/image/kube/main.mjs "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid"; exit 130' INT TERM
wait "$pid"
