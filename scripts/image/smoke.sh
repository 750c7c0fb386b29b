#!/usr/bin/env bash
# Smoke-tests the image scripts/image/build.sh built (localhost/svc:ci), run as the chart runs
# it: uid 1000, read-only root filesystem, all capabilities dropped, no new privileges, a
# writable /data and /tmp only.
#   1. embedded: the whole platform in one container (no SVC_SERVICE): /health, /ready (and
#      /v1/...), and GET /v1/me with the bootstrap key;
#   2. split: every service in its own container (SVC_SERVICE=<name>) against this machine's
#      PostgreSQL (a fresh database, dropped after), Redis and NATS, wired as the chart wires them
#      (SVC_INTERNAL_SECRET, SVC_<NAME>_ADDR of every gRPC service); the gateway's /ready, then
#      GET /v1/me and GET /v1/accounts, which cross gateway -> keys -> accounts -> SQL.
# Containers share the host's network but every listener is bound to 127.0.0.1 (HOST,
# GRPC_HOST), each on a free port. Everything the script starts is removed on exit.
# Backends: DATABASE_URL (an admin URL; default postgres://postgres@127.0.0.1:5432/postgres),
# REDIS_URL, NATS_URL (defaults on 127.0.0.1); all must be loopback addresses.
set -euo pipefail
# shellcheck source=scripts/image/common.sh
. "$(dirname "$0")/common.sh"

PG_ADMIN_URL="${SMOKE_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
REDIS="${REDIS_URL:-redis://127.0.0.1:6379}"
NATS="${NATS_URL:-nats://127.0.0.1:4222}"
for u in "$PG_ADMIN_URL" "$REDIS" "$NATS"; do
  case "$u" in
    *@127.0.0.1[:/]* | *//127.0.0.1[:/]* | *@localhost[:/]* | *//localhost[:/]*) ;;
    *) die "smoke: backends must be on the loopback address; got $u" ;;
  esac
done

command -v podman >/dev/null || die "smoke: podman is missing (scripts/image/build.sh installs it)"
podman image exists "$SVC_IMAGE" || die "smoke: no image $SVC_IMAGE (run scripts/image/build.sh)"

run_id="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
prefix="svc-smoke-$run_id"
namespace="smoke$run_id"
database="svc_smoke_$run_id"
hex64() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
bootstrap_key="svc_$(hex64)"
internal_secret="$(hex64)"
data_dir="$(mktemp -d)"
db_created=false

# Runs scripts/image/backends.cjs in the image (its pg and nats clients).
backends() {
  podman run --rm --network host --read-only --user 1000:1000 \
    -v "$IMAGE_DIR/backends.cjs:/smoke/backends.cjs:ro" -e NODE_PATH=/app/node_modules \
    "$SVC_IMAGE" node /smoke/backends.cjs "$@"
}

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for c in $(podman ps -a --filter "name=^$prefix-" --format '{{.Names}}'); do
      echo "--- logs of $c (last 30 lines)" >&2
      podman logs --tail 30 "$c" >&2 2>&1 || true
    done
  fi
  podman ps -a --filter "name=^$prefix-" --format '{{.Names}}' | xargs -r podman rm -f -t 3 >/dev/null 2>&1 || true
  if [ "$db_created" = true ]; then
    backends drop-db "$PG_ADMIN_URL" "$database" || echo "smoke: could not drop the database $database" >&2
    backends drop-stream "$NATS" "$namespace" || echo "smoke: could not drop the NATS stream of $namespace" >&2
  fi
  rm -rf "$data_dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})' 2>/dev/null \
    || python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# The chart's pod: uid 1000, read-only root, no capabilities, no new privileges, /tmp and /data
# writable (emptyDir there: a tmpfs and a directory here).
run_container() { # name data-mount env...
  local name=$1 data=$2
  shift 2
  local envs=()
  for e in "$@"; do envs+=(-e "$e"); done
  podman run -d --name "$prefix-$name" --network host \
    --read-only --read-only-tmpfs=false --tmpfs /tmp:rw,mode=1777 \
    --user 1000:1000 --cap-drop=ALL --security-opt no-new-privileges \
    --mount "$data" \
    -e HOST=127.0.0.1 -e GRPC_HOST=127.0.0.1 -e SVC_DATA_DIR=/data -e LOG_LEVEL=warn "${envs[@]}" \
    "$SVC_IMAGE" >/dev/null
}

# Waits until GET url answers 200 (or the container has stopped).
wait_ok() { # container url seconds
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt $deadline ]; do
    if curl -fsS -o /dev/null --max-time 2 "$2" 2>/dev/null; then return 0; fi
    if [ "$(podman inspect --format '{{.State.Running}}' "$prefix-$1" 2>/dev/null)" != true ]; then
      die "smoke: container $1 stopped before $2 answered"
    fi
    sleep 0.5
  done
  die "smoke: $2 did not answer 200 within $3 s"
}

# GET with a key; fails unless 200 and the body holds the given text.
expect_get() { # url key text
  local body
  body="$(curl -sS --max-time 10 -w '\n%{http_code}' -H "Authorization: Bearer $2" "$1")"
  local status="${body##*$'\n'}"
  body="${body%$'\n'*}"
  [ "$status" = 200 ] || die "smoke: GET $1 answered $status: $body"
  case "$body" in
    *"$3"*) ;;
    *) die "smoke: GET $1 answered 200 without $3: $body" ;;
  esac
}

check_gateway() { # container base-url
  local t0=$SECONDS
  wait_ok "$1" "$2/health" 60
  wait_ok "$1" "$2/v1/health" 5
  wait_ok "$1" "$2/ready" 60
  wait_ok "$1" "$2/v1/ready" 5
  log "smoke: $1 healthy and ready after $((SECONDS - t0)) s"
  expect_get "$2/v1/me" "$bootstrap_key" '"accountId"'
  expect_get "$2/v1/accounts" "$bootstrap_key" '"accounts"'
  # A request without a key is refused in the platform's error shape.
  local body
  body="$(curl -sS --max-time 10 "$2/v1/me")"
  case "$body" in
    *'"error"'*'"code"'*'"requestId"'*) ;;
    *) die "smoke: GET /v1/me without a key answered: $body" ;;
  esac
}

start=$SECONDS

# 1. Embedded: one container, PGlite and the in-process bus in its own /data (an emptyDir in the
# chart: a directory owned by uid 1000 here; runc leaves a tmpfs root-owned, whatever its mode).
mkdir "$data_dir/embedded" "$data_dir/split"
chown 1000:1000 "$data_dir/embedded" "$data_dir/split"
port="$(free_port)"
run_container embedded "type=bind,source=$data_dir/embedded,destination=/data" \
  "PORT=$port" "SVC_BOOTSTRAP_KEY=$bootstrap_key"
check_gateway embedded "http://127.0.0.1:$port"
podman rm -f -t 10 "$prefix-embedded" >/dev/null
log "smoke: embedded passed"

# 2. One container per service on PostgreSQL, Redis and NATS.
backends create-db "$PG_ADMIN_URL" "$database"
db_created=true
database_url="${PG_ADMIN_URL%/*}/$database"
services=(keys accounts drive agents models trading profiles mcp runtime gateway)
grpc=(keys accounts drive agents models trading profiles mcp)
declare -A grpc_port
addrs=()
for s in "${grpc[@]}"; do
  grpc_port[$s]="$(free_port)"
  addrs+=("SVC_${s^^}_ADDR=127.0.0.1:${grpc_port[$s]}")
done
gateway_port="$(free_port)"
# One directory for /data of every container: with no S3 the drive's blobs are files there, which
# the gateway and the drive service both reach (the chart gives them S3 instead).
for s in "${services[@]}"; do
  if [ "$s" = gateway ]; then http="$gateway_port"; else http="$(free_port)"; fi
  run_container "$s" "type=bind,source=$data_dir/split,destination=/data" \
    "SVC_SERVICE=$s" "PORT=$http" "GRPC_PORT=${grpc_port[$s]:-$(free_port)}" \
    "SVC_NAMESPACE=$namespace" "SVC_INTERNAL_SECRET=$internal_secret" "SVC_BOOTSTRAP_KEY=$bootstrap_key" \
    "DATABASE_URL=$database_url" "REDIS_URL=$REDIS" "NATS_URL=$NATS" "${addrs[@]}"
done
check_gateway gateway "http://127.0.0.1:$gateway_port"
for s in "${services[@]}"; do
  [ "$(podman inspect --format '{{.State.Running}}' "$prefix-$s")" = true ] || die "smoke: $s is not running"
done
log "smoke: ${#services[@]} services, one container each, passed"
log "smoke: passed in $((SECONDS - start)) s"
