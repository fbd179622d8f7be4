#!/usr/bin/env bash
# Lists every field under `spec` of the CRDs whose objects Coxswain reads, so
# that crates/translate/tests/field_audit.rs can insist each one is audited in
# crates/translate/tests/audit/fields.tsv ("nothing configured is silently
# ignored").
#
# Sources:
#   - the Gateway API CRDs pinned by tools/k8s/crds/go.mod, experimental
#     channel (the one scripts/cluster.sh installs), served storage version;
#   - Coxswain's own CRDs, deploy/crds/coxswain.yaml.
# Kinds: every Gateway API kind in the kinds table (crates/api/src/kinds.rs;
# core kinds are Kubernetes' own and not audited), plus the kinds in
# PENDING_KINDS below (audited ahead of landing: their rows are `pending`),
# plus every kind in deploy/crds/coxswain.yaml.
#
# One line per path: `Kind path`, arrays as `[]`, objects as `.`, maps whose
# values are objects as `{}`. Every node is listed, leaves and containers,
# so a new sub-object shows up as a new line. Sorted (C locale).
#
#   scripts/gen-crd-fields.sh           rewrite crates/translate/tests/audit/crd-fields.txt
#   scripts/gen-crd-fields.sh --check   exit 1 if it is out of date (CI)
#
# Needs Go (module download only; the module cache is used when warm),
# jq and python3 with PyYAML.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo/crates/translate/tests/audit/crd-fields.txt"
# Kinds not in the kinds table yet whose fields are listed already.
PENDING_KINDS="ListenerSet"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

check=false
case "${1:-}" in
  --check) check=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# A python3 that has PyYAML: the first on PATH, else Debian's, installing
# python3-yaml when root (as .ci/run does for its tools).
python_with_yaml() {
  local py
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import yaml' 2>/dev/null; then
      printf '%s\n' "$py"; return 0
    fi
  done
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-yaml >&2
    /usr/bin/python3 -c 'import yaml' && { printf '%s\n' /usr/bin/python3; return 0; }
  fi
  echo "$0: needs python3 with PyYAML (Debian: python3-yaml)" >&2
  return 1
}
python="$(python_with_yaml)"

crds="$repo/tools/k8s/crds"
version="$(cd "$crds" && go mod edit -json | jq -r '.Require[] | select(.Path == "sigs.k8s.io/gateway-api") | .Version')"
[ -n "$version" ] || { echo "$0: no sigs.k8s.io/gateway-api in $crds/go.mod" >&2; exit 1; }
dir="$(cd "$crds" && go mod download -json "sigs.k8s.io/gateway-api@$version" | jq -r .Dir)"
channel="$dir/config/crd/experimental"
[ -d "$channel" ] || { echo "$0: no config/crd/experimental in $dir" >&2; exit 1; }

generate() { # -> stdout
  "$python" - "$repo" "$version" "$channel" "$PENDING_KINDS" <<'PY'
import glob, os, re, sys
import yaml

repo, version, channel, pending = sys.argv[1:5]
pending = pending.split()

# Gateway API kinds of the kinds table: `kind: "X", group: "gateway.networking...`.
kinds_rs = open(os.path.join(repo, "crates/api/src/kinds.rs")).read()
table = re.findall(r'kind:\s*"([A-Za-z]+)",\s*group:\s*"(gateway\.networking\.(?:x-)?k8s\.io)"', kinds_rs)
wanted = sorted({k for k, _ in table} | set(pending))
if not table:
    sys.exit("gen-crd-fields: found no Gateway API kinds in crates/api/src/kinds.rs")

def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "CustomResourceDefinition"]

def storage(crd):
    vs = [v for v in crd["spec"]["versions"] if v.get("storage") and v.get("served")]
    if len(vs) != 1:
        sys.exit(f"gen-crd-fields: {crd['metadata']['name']}: no single served storage version")
    return vs[0]

def walk(schema, path, out):
    """Every node below `schema` (which sits at `path`), appended to out."""
    t = schema.get("type")
    if t == "array":
        path += "[]"
        out.append(path)
        walk(schema.get("items") or {}, path, out)
        return
    if path:
        # The array case appended already; here: objects, maps, scalars.
        if not path.endswith("[]"):
            out.append(path)
    props = schema.get("properties") or {}
    for name in props:
        walk(props[name], f"{path}.{name}" if path else name, out)
    # A map whose values have structure of their own: its values are `{}`.
    # (A map of scalars, like labels, is one leaf.)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and (extra.get("properties") or extra.get("type") == "array"
                                    or isinstance(extra.get("additionalProperties"), dict)):
        walk(extra, path + "{}", out)

lines = []
found = {}
sources = []
for f in sorted(glob.glob(os.path.join(channel, "*.yaml"))):
    for crd in load(f):
        kind = crd["spec"]["names"]["kind"]
        if kind not in wanted:
            continue
        v = storage(crd)
        found[kind] = True
        # Only the storage version is listed: insist the other served
        # versions have no field it lacks, or the audit would miss them.
        stored = []
        walk(v["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec", stored)
        stored = set(stored)
        for other in crd["spec"]["versions"]:
            if other is v or not other.get("served"):
                continue
            theirs = []
            walk(other["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec", theirs)
            theirs = set(theirs)
            if theirs - stored:
                sys.exit(f"gen-crd-fields: {kind} {other['name']} has fields {v['name']} (storage) lacks: "
                         + ", ".join(sorted(theirs - stored)) + "; list the served versions too")
        sources.append(f"# {kind}: {crd['spec']['group']}/{v['name']} from sigs.k8s.io/gateway-api@{version} config/crd/experimental/{os.path.basename(f)}"
                       + (" (pending: not in the kinds table yet)" if kind in pending and kind not in {k for k, _ in table} else ""))
        spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
        paths = []
        walk(spec, "spec", paths)
        lines += [(kind, p) for p in paths if p != "spec"]
missing = [k for k in wanted if k not in found]
if missing:
    sys.exit(f"gen-crd-fields: no CRD in {channel} for {', '.join(missing)}")

own = os.path.join(repo, "deploy/crds/coxswain.yaml")
own_crds = load(own)
if not own_crds:
    sys.exit("gen-crd-fields: no CustomResourceDefinition in deploy/crds/coxswain.yaml (regenerate it with `coxswain crds`)")
for crd in own_crds:
    kind = crd["spec"]["names"]["kind"]
    v = storage(crd)
    sources.append(f"# {kind}: {crd['spec']['group']}/{v['name']} from deploy/crds/coxswain.yaml")
    paths = []
    walk(v["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec", paths)
    lines += [(kind, p) for p in paths if p != "spec"]

if len(set(lines)) != len(lines):
    sys.exit("gen-crd-fields: duplicate paths")
print("# Generated by scripts/gen-crd-fields.sh; do not edit. Every field under `spec` of")
print("# the served storage version of each kind Coxswain reads. Audited in fields.tsv")
print("# by crates/translate/tests/field_audit.rs.")
for s in sorted(sources):
    print(s)
for kind, p in sorted(lines, key=lambda kp: (kp[0].encode(), kp[1].encode())):
    print(f"{kind} {p}")
PY
}

if $check; then
  tmp="$(mktemp)"
  trap 'rm -f "$tmp"' EXIT
  generate > "$tmp"
  if ! diff -u "$out" "$tmp"; then
    echo "$0: ${out#"$repo"/} is out of date; run scripts/gen-crd-fields.sh and audit the new fields in fields.tsv" >&2
    exit 1
  fi
else
  mkdir -p "$(dirname "$out")"
  tmp="$(mktemp "$out.XXXXXX")"
  trap 'rm -f "$tmp"' EXIT
  generate > "$tmp"
  mv "$tmp" "$out"
  trap - EXIT
  echo "wrote ${out#"$repo"/} ($(grep -vc '^#' "$out") paths)"
fi
