#!/usr/bin/env bash
# Regenerate tools/k8s/go.mod for a given Kubernetes release.
#
# The k8s.io/kubernetes module requires its staging (library) modules at
# v0.0.0 and points them at ./staging with replace lines that only work inside
# the upstream tree. A dependent module has to replace each of them with the
# published v0.X.Y release itself. This script reads the upstream go.mod from
# the module cache, takes every requirement pinned at exactly v0.0.0 (plus any
# module replaced by a ./staging path), and writes one replace line per module.
#
# Usage: tools/k8s/gen-replaces.sh v1.35.8
set -euo pipefail
export GOTOOLCHAIN=local
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ver="${1:?usage: gen-replaces.sh v1.MINOR.PATCH}"
case "$ver" in v1.*.*) ;; *) echo "version must look like v1.35.8" >&2; exit 2 ;; esac
lib="v0.${ver#v1.}"

cd "$here"
modfile="$(go mod download -json "k8s.io/kubernetes@$ver" | jq -r .GoMod)"
[ -f "$modfile" ] || { echo "no go.mod for k8s.io/kubernetes@$ver" >&2; exit 1; }

mapfile -t mods < <(
  {
    # requirements pinned at exactly v0.0.0 (optionally "// indirect")
    awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$modfile"
    # anything replaced by a path under ./staging
    awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$modfile"
  } | sort -u
)
[ "${#mods[@]}" -gt 0 ] || { echo "found no staging modules in $modfile" >&2; exit 1; }

# Drop old replaces, then add the new ones and the kubernetes requirement.
for old in $(go mod edit -json | jq -r '.Replace[]?.Old.Path'); do
  go mod edit -dropreplace="$old"
done
go mod edit -require="k8s.io/kubernetes@$ver"
for m in "${mods[@]}"; do
  go mod edit -replace="$m=$m@$lib"
done
echo "wrote ${#mods[@]} replace lines ($lib) for k8s.io/kubernetes $ver" >&2
