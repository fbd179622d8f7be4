#!/usr/bin/env bash
# Reload latency with 5,000 HTTPRoutes: time from writing a route file until
# the gateway serves it (p50/p99/max), plus the gateway's own split between
# watching, translating and applying. Target: p99 < 20 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --release -p coxswain --bin coxswain --example reload_latency
COXSWAIN_BIN="$target_dir/release/coxswain" "$target_dir/release/examples/reload_latency"
