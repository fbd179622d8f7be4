#!/usr/bin/env bash
# Runs Helm v3, building it from Go modules on first use (helm is not
# packaged here). The binary is cached outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/helm/<version>/helm
#
#   scripts/helm.sh build        only build (or reuse) the cached binary
#   scripts/helm.sh ARGS...      run helm ARGS...
#
# HELM_VERSION overrides the pinned version (the newest v3 release the Go
# module proxy served when this was written). Needs Go; takes a few minutes
# the first time.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/helm/$HELM_VERSION"
helm="$dir/helm"

if [ ! -x "$helm" ]; then
  command -v go >/dev/null || { echo "[helm] error: go is not installed" >&2; exit 1; }
  echo "[helm] building helm $HELM_VERSION into $dir (first run only)" >&2
  tmp="$dir.tmp.$$"
  mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  # Static, no toolchain download; the version string `helm version` prints.
  GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mkdir -p "$dir"
  mv "$tmp/helm" "$helm"
  echo "[helm] built $helm" >&2
fi

[ "${1:-}" = build ] && exit 0
# Keep helm's own config/cache out of the user's home defaults.
export HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$dir/config}"
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$dir/cache}"
export HELM_DATA_HOME="${HELM_DATA_HOME:-$dir/data}"
exec "$helm" "$@"
