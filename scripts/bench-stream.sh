#!/usr/bin/env bash
# The controller-to-proxy config stream at scale, SIMULATED on one machine:
# one controller (this tool's process) serving one Gateway's config over
# mTLS gRPC on loopback to N proxy subscriptions (a second process holding
# all of them, each with its own client certificate), with M HTTPRoutes.
# Reports the time from a route change to the last proxy's ack
# (p50/p99/max), the controller's CPU and memory per connected proxy, and
# the protobuf bytes each change sends. Target (issue): p99 < 100 ms at
# 100 proxies and 5,000 routes.
#
# usage: scripts/bench-stream.sh [--routes 5000] [--proxies 100] [--changes 200]
#            [--max-seconds 900] [--out FILE]
#   --max-seconds  bound on the whole run (build excluded); cut off = failure
#   --out          also write the report to FILE
# Knobs: CARGO_TARGET_DIR (default target), STREAM_SIM_BIN (skip the build,
# use this binary).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUTES=5000
PROXIES=100
CHANGES=200
MAX_SECONDS=900
OUT=""

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --routes) ROUTES=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    --changes) CHANGES=$2; shift 2 ;;
    --max-seconds) MAX_SECONDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$ROUTES$PROXIES$CHANGES$MAX_SECONDS" in
*[!0-9]*) echo "--routes, --proxies, --changes and --max-seconds take whole numbers" >&2; exit 2 ;;
esac

BIN=${STREAM_SIM_BIN:-}
if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build --release --locked -p coxswain-stream-sim)
    target_dir=${CARGO_TARGET_DIR:-target}
    case $target_dir in /*) ;; *) target_dir="$ROOT/$target_dir" ;; esac
    BIN="$target_dir/release/coxswain-stream-sim"
fi

echo "stream-sim: $ROUTES routes, $PROXIES proxies, $CHANGES changes (at most ${MAX_SECONDS}s)" >&2
status=0
report=$(timeout --kill-after=10 "$MAX_SECONDS" "$BIN" \
    --routes "$ROUTES" --proxies "$PROXIES" --changes "$CHANGES" \
    --timeout-secs "$MAX_SECONDS") || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "stream-sim: cut off after ${MAX_SECONDS}s" >&2
    exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
printf '%s\n' "$report"
if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    printf '%s\n' "$report" >"$OUT"
fi
