#!/usr/bin/env bash
# Config propagation in Kubernetes mode, on the local control plane: with
# 5,000 HTTPRoutes loaded, the time from a route write to the API server
# until the Gateway answers 200 on the new path (p50/p99/max), for a moved
# route and a new one, plus the controller's own split. Target: p99 < 20 ms.
#
#   scripts/bench-k8s-reload.sh [--routes 5000] [--changes 100] [--without-hostnames]
#
# Needs root (network namespaces). Builds release binaries, then runs
# tests/k8s/examples/k8s_reload_latency, which brings up its own cluster
# instance (cxe2e-N, as the e2e tests do) and tears it down at the end.
# Should the run be killed, the exit trap tears down the instance it left
# (that run's only; never another's). docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "bench-k8s-reload: needs root (network namespaces)" >&2
  exit 1
fi
target_dir="$(realpath "${CARGO_TARGET_DIR:-target}")"
cargo build --release -p coxswain -p coxswain-fakelet
cargo build --release -p coxswain-k8s-tests --example k8s_reload_latency
bench="$target_dir/release/examples/k8s_reload_latency"

revision="$(git rev-parse --short HEAD)"
if ! git diff --quiet HEAD -- crates tests/k8s tools/fakelet; then
  revision="$revision + uncommitted changes"
fi
echo "git $revision; $(date -u +%Y-%m-%dT%H:%M:%SZ); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ -n "$pid" ]; then
    "$bench" --reap "$pid" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

COXSWAIN_E2E_COXSWAIN_BIN="$target_dir/release/coxswain" \
  COXSWAIN_E2E_FAKELET_BIN="$target_dir/release/coxswain-fakelet" \
  "$bench" "$@" &
pid=$!
wait "$pid"
