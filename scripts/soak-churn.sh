#!/usr/bin/env bash
# Route-churn soak: `coxswain run` with N HTTPRoutes whose files keep
# changing (edits, renames, files added and deleted; each change checked
# through the gateway) for a bounded time, with RSS and /metrics sampled.
# Fails on growth past the baseline or on a change not served in 10 s; the
# rules are in bench/soak_churn.py.
#
# usage: scripts/soak-churn.sh [--duration 3600] [--routes 5000] [--sample 10]
#            [--pause 0.2] [--coxswain-bin PATH] [--out bench/results/soak-churn.tsv]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=3600
ROUTES=5000
SAMPLE=10
PAUSE=0.2
COXSWAIN_BIN=""
OUT="$ROOT/bench/results/soak-churn.tsv"

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --routes) ROUTES=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --pause) PAUSE=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$DURATION$ROUTES$SAMPLE" in
*[!0-9]*) echo "--duration, --routes and --sample take whole numbers" >&2; exit 2 ;;
esac

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/soak-churn.XXXXXX")
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
cleanup() {
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$COXSWAIN_BIN" ]; then
    (cd "$ROOT" && cargo build --release --quiet -p coxswain)
    COXSWAIN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/coxswain"
fi

port=$(free_port) admin=$(free_port) echo_port=$(free_port)
config="$WORKDIR/config"
mkdir -p "$config"
cat >"$config/base.yaml" <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: coxswain-labs.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: soak
spec:
  gatewayClassName: coxswain
  listeners:
  - name: http
    protocol: HTTP
    port: ${port}
---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
  - port: ${echo_port}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- port: ${echo_port}
endpoints:
- addresses: [127.0.0.1]
YAML
driver=(python3 "$ROOT/bench/soak_churn.py" --dir "$config" --port "$port"
    --admin-port "$admin" --echo-port "$echo_port" --routes "$ROUTES")
"${driver[@]}" --pid 0 --samples-out /dev/null --write-only

start_pinned coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
    "$COXSWAIN_BIN" run --config "$config" --bind-address 127.0.0.1 \
    --admin-address "127.0.0.1:$admin" --echo "127.0.0.1:$echo_port"
mkdir -p "$(dirname "$OUT")"
echo "soak: $ROUTES routes, ${DURATION} s of churn, samples in $OUT" >&2
"${driver[@]}" --pid "$LAST_PID" --duration "$DURATION" --sample "$SAMPLE" \
    --pause "$PAUSE" --samples-out "$OUT"
