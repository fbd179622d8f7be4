#!/usr/bin/env bash
# The Kubernetes end-to-end tests (tests/k8s), with the slow one-time build
# made explicit. `cargo test --workspace` runs the same tests; this script
# only does the cached builds first so their time is reported separately.
#
#   scripts/k8s-test.sh [SCENARIO-FILTER...]
#
# 1. scripts/cluster.sh build: kube-apiserver, controller manager, etcd and
#    kubectl from Go modules into ~/.cache/coxswain/k8s/<version>/bin
#    (about 17 minutes the first time on a machine, then cached);
# 2. tools/fakelet/build-echo-basic.sh (cached in ~/.cache/coxswain/bin);
# 3. cargo test -p coxswain-k8s-tests (builds coxswain and the fakelet).
# Needs root.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
t=$SECONDS
"$repo/scripts/cluster.sh" build
"$repo/tools/fakelet/build-echo-basic.sh"
echo "[k8s-test] cached builds ready in $((SECONDS - t))s" >&2
cd "$repo"
exec cargo test -p coxswain-k8s-tests -- "$@"
