#!/usr/bin/env bash
# Enforces the crate dependency rules of the pipeline
#   providers -> Snapshot (api) -> translate -> IR (ir) -> proxy
# on the resolved graph of normal (non-dev, non-build) dependencies, with the
# features each crate itself enables (not the workspace-wide union):
#   1. coxswain-ir depends on no internal (workspace) crate;
#   2. coxswain-translate reaches no tokio, hyper, notify, kube-client or
#      kube-runtime (the types-only `kube` facade that gateway-api re-exports
#      is fine: a kube client cannot be built without kube-client);
#   3. coxswain-proxy reaches no coxswain-api, coxswain-translate, gateway-api,
#      k8s-openapi, kube or kube-*;
#   4. no coxswain-provider-* crate reaches coxswain-proxy;
#   5. coxswain-stream (controller-to-proxy config stream) reaches no
#      internal crate but coxswain-ir, and no gateway-api, k8s-openapi or
#      kube-*: what a dedicated proxy links holds no Kubernetes client;
# and one source rule: no std::sync::Mutex in crates/proxy/src (the hot path
# is meant to be lock-free; use atomics or arc-swap) unless the importing line
# says why the lock is off the request path with a `// lock-ok: <reason>`.
#
# usage: scripts/check-architecture.sh [--metadata FILE] [--proxy-src DIR]
#        scripts/check-architecture.sh --self-test
#   --metadata FILE  check this `cargo metadata --format-version 1` output
#                    instead of the workspace's
#   --proxy-src DIR  scan this directory instead of crates/proxy/src
#   --self-test      every fixture in tests/architecture-fixtures/ must give
#                    the outcome its `expect` file states, then the real
#                    workspace must pass
# Exit status: 0 all rules hold, 1 a rule is violated, 2 usage or tool error.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FIXTURES="$ROOT/tests/architecture-fixtures"
TMP_METADATA=""
trap 'if [ -n "$TMP_METADATA" ]; then rm -f "$TMP_METADATA"; fi' EXIT

ensure_python() {
    command -v python3 >/dev/null && return 0
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >&2
    else
        echo "check-architecture: python3 is required" >&2
        exit 2
    fi
}

# check METADATA PROXY_SRC : run the rules once (the checker is inline so
# this file is the whole gate).
check() {
    python3 - "$1" "$2" "$ROOT" <<'PY'
import json, os, re, sys

# Normal-dependency rules: (crate or prefix, forbidden predicate, explanation).
TRANSLATE_FORBIDDEN = {"tokio", "hyper", "notify", "kube-client", "kube-runtime"}
PROXY_FORBIDDEN = {"coxswain-api", "coxswain-translate", "gateway-api", "k8s-openapi", "kube"}
MUTEX_PATTERNS = [
    re.compile(r"std\s*::\s*sync\s*::\s*Mutex\b"),
    re.compile(r"std\s*::\s*sync\s*::\s*\{[^}]*\bMutex\b[^}]*\}", re.S),
]


def load(path):
    try:
        with open(path) as f:
            meta = json.load(f)
        return meta["packages"], meta["workspace_members"], meta["resolve"]["nodes"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"check-architecture: cannot read metadata {path}: {err}")
        sys.exit(2)


class Graph:
    """Per-crate feature resolution over the resolved graph: which packages a
    crate pulls in through normal dependencies with the features it enables."""

    def __init__(self, packages, nodes):
        self.pkg = {p["id"]: p for p in packages}
        self.node = {n["id"]: n for n in nodes}

    def name(self, pkg_id):
        return self.pkg[pkg_id]["name"]

    def resolved_dep(self, pkg_id, decl):
        """The package a declared dependency resolved to, if it is in the graph."""
        extern = (decl.get("rename") or decl["name"]).replace("-", "_")
        deps = self.node.get(pkg_id, {}).get("deps", [])
        for d in deps:
            if d["name"] == extern:
                return d["pkg"]
        for d in deps:
            if self.name(d["pkg"]) == decl["name"]:
                return d["pkg"]
        return None

    def reach(self, root):
        """Packages (id -> parent id) reachable from root through normal deps."""
        features = {root: {"default"}}
        parent = {root: None}
        changed = True
        while changed:
            changed = False
            for pkg_id in list(features):
                package = self.pkg[pkg_id]
                table = package.get("features", {})
                enabled, optional = set(), set()
                todo = list(features[pkg_id])
                dep_features = {}
                while todo:
                    feat = todo.pop()
                    if feat in enabled:
                        continue
                    enabled.add(feat)
                    for item in table.get(feat, []):
                        if item.startswith("dep:"):
                            optional.add(item[4:])
                        elif "/" in item:
                            dep, sub = item.split("/", 1)
                            weak = dep.endswith("?")
                            dep = dep.rstrip("?")
                            if not weak:
                                optional.add(dep)
                            dep_features.setdefault(dep, set()).add(sub)
                        else:
                            todo.append(item)
                for decl in package.get("dependencies", []):
                    if decl.get("kind") is not None:
                        continue
                    key = decl.get("rename") or decl["name"]
                    if decl.get("optional") and key not in optional:
                        continue
                    dep_id = self.resolved_dep(pkg_id, decl)
                    if dep_id is None:
                        continue
                    wanted = set(decl.get("features", [])) | dep_features.get(key, set())
                    if decl.get("uses_default_features", True):
                        wanted.add("default")
                    have = features.setdefault(dep_id, set())
                    if dep_id not in parent:
                        parent[dep_id] = pkg_id
                        changed = True
                    if not wanted <= have:
                        have |= wanted
                        changed = True
        return parent

    def path(self, parent, pkg_id):
        chain = []
        while pkg_id is not None:
            chain.append(self.name(pkg_id))
            pkg_id = parent[pkg_id]
        return " -> ".join(reversed(chain))


def dependency_violations(packages, members, nodes):
    graph = Graph(packages, nodes)
    by_name = {graph.name(m): m for m in members}
    internal = set(by_name)
    errors = []

    def forbid(crate, forbidden, why):
        root = by_name.get(crate)
        if root is None:
            errors.append(f"{crate}: not a workspace member (was it renamed? update this script)")
            return
        parent = graph.reach(root)
        for pkg_id in sorted(parent, key=graph.name):
            if pkg_id != root and forbidden(graph.name(pkg_id)):
                errors.append(f"{crate} must not depend on {graph.name(pkg_id)} ({why}): "
                              f"{graph.path(parent, pkg_id)}")

    forbid("coxswain-ir", lambda n: n in internal,
           "the IR is the contract and depends on no internal crate")
    forbid("coxswain-translate", lambda n: n in TRANSLATE_FORBIDDEN,
           "the translator is pure: no async runtime, HTTP, file watching or kube client")
    forbid("coxswain-proxy", lambda n: n in PROXY_FORBIDDEN or n.startswith("kube-"),
           "the proxy serves the IR only, never Gateway API or Kubernetes types")
    forbid("coxswain-stream",
           lambda n: (n in internal and n != "coxswain-ir") or n in PROXY_FORBIDDEN
           or n.startswith("kube-"),
           "the stream carries the IR only; proxies hold no Kubernetes client")
    for crate in sorted(n for n in internal if n.startswith("coxswain-provider-")):
        forbid(crate, lambda n: n == "coxswain-proxy",
               "providers build Snapshots and never reach into the data plane")
    return errors


def mutex_violations(src, root):
    errors = []
    if not os.path.isdir(src):
        return [f"proxy source directory {src} not found"]
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for filename in sorted(filenames):
            if not filename.endswith(".rs"):
                continue
            path = os.path.join(dirpath, filename)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            # Blank out line comments so prose about Mutex is not a finding.
            code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
            for pattern in MUTEX_PATTERNS:
                for match in pattern.finditer(code):
                    line = code.count("\n", 0, match.start()) + 1
                    if re.search(r"//\s*lock-ok:\s*\S", text.splitlines()[line - 1]):
                        continue
                    errors.append(f"{os.path.relpath(path, root)}:{line}: std::sync::Mutex in the proxy "
                                  "(keep the data plane lock-free: atomics, arc-swap)")
    return errors


def main(metadata, proxy_src, root):
    packages, members, nodes = load(metadata)
    errors = dependency_violations(packages, members, nodes) + mutex_violations(proxy_src, root)
    for err in errors:
        print(f"architecture violation: {err}")
    if errors:
        sys.exit(1)
    print("architecture rules hold")


main(sys.argv[1], sys.argv[2], sys.argv[3])
PY
}

# workspace_metadata OUT : the workspace's metadata (all targets, so a
# platform-specific dependency cannot hide); cargo's chatter shown on failure only.
workspace_metadata() {
    local out=$1 log
    log=$(cd "$ROOT" && cargo metadata --format-version 1 2>&1 >"$out") || {
        echo "$log" >&2
        echo "check-architecture: cargo metadata failed" >&2
        exit 2
    }
}

# self_test : each fixture dir holds metadata.json (or uses the passing
# workspace in pass-workspace/), optionally proxy-src/, and `expect`: either
# "pass" or "fail: TEXT" where TEXT must appear in the checker's report.
self_test() {
    local dir name expect metadata src output status failures=0 count=0
    for dir in "$FIXTURES"/*/; do
        name=$(basename "$dir")
        expect=$(cat "$dir/expect")
        metadata="$dir/metadata.json"
        [ -f "$metadata" ] || metadata="$FIXTURES/pass-workspace/metadata.json"
        src="$dir/proxy-src"
        [ -d "$src" ] || src="$FIXTURES/pass-workspace/proxy-src"
        status=0
        output=$(check "$metadata" "$src" 2>&1) || status=$?
        count=$((count + 1))
        case $expect in
        pass)
            if [ "$status" -ne 0 ]; then
                echo "self-test FAILED: $name should pass but got status $status:" >&2
                echo "$output" >&2
                failures=$((failures + 1))
            fi
            ;;
        fail:*)
            if [ "$status" -ne 1 ] || ! grep -qF -- "${expect#fail: }" <<<"$output"; then
                echo "self-test FAILED: $name should fail (status 1) with '${expect#fail: }'," \
                    "got status $status:" >&2
                echo "$output" >&2
                failures=$((failures + 1))
            fi
            ;;
        *)
            echo "self-test: $name/expect must be 'pass' or 'fail: TEXT'" >&2
            failures=$((failures + 1))
            ;;
        esac
    done
    echo "architecture fixtures: $((count - failures)) passed, $failures failed"
    [ "$failures" -eq 0 ] || exit 1

    echo "workspace:"
    TMP_METADATA=$(mktemp)
    workspace_metadata "$TMP_METADATA"
    check "$TMP_METADATA" "$ROOT/crates/proxy/src"
}

main() {
    local metadata="" proxy_src="$ROOT/crates/proxy/src"
    while [ "$#" -gt 0 ]; do
        case $1 in
        --self-test) ensure_python; self_test; return ;;
        --metadata) metadata=$2; shift 2 ;;
        --proxy-src) proxy_src=$2; shift 2 ;;
        -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; return 0 ;;
        *) echo "check-architecture: unknown argument $1" >&2; exit 2 ;;
        esac
    done
    ensure_python
    if [ -z "$metadata" ]; then
        TMP_METADATA=$(mktemp)
        workspace_metadata "$TMP_METADATA"
        metadata=$TMP_METADATA
    fi
    check "$metadata" "$proxy_src"
}

main "$@"
