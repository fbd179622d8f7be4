"""Writes the fixtures for scripts/check-architecture.sh --self-test.

Each fixture is a directory with `expect` ("pass" or "fail: TEXT", TEXT being
part of the report the checker must print) and a miniature `cargo metadata`
(metadata.json: a fake workspace shaped like ours, plus the one change the
fixture is about) and/or a fake proxy source tree (proxy-src/). A fixture
without one of them borrows it from pass-workspace/. The miniature graph
is a resolved graph as cargo reports it: feature-unified across the
workspace, which is why pass-workspace has a provider that turns on kube's
client while the translator must still pass.

Run: python3 tests/architecture-fixtures/generate.py
"""

import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))


def dep(name, features=(), kind=None, optional=False):
    """A declared dependency: (name, optional, features, kind)."""
    return (name, optional, list(features), kind)


def pkg_id(name):
    source = "path+file:///ws/" if name.startswith("coxswain") else "registry+index#"
    return f"{source}{name}@1.0.0"


def base():
    """Our workspace in miniature: name -> (features table, declared deps)."""
    internal = ["coxswain-ir", "coxswain-api", "coxswain-translate", "coxswain-proxy",
                "coxswain-provider-file", "coxswain-provider-k8s", "coxswain-stream"]
    return {
        "coxswain-ir": ({}, [dep("serde")]),
        "coxswain-api": ({}, [dep("gateway-api"), dep("k8s-openapi")]),
        "coxswain-translate": ({}, [dep("coxswain-api"), dep("coxswain-ir")]),
        "coxswain-proxy": ({}, [dep("coxswain-ir"), dep("tokio"), dep("hyper")]),
        "coxswain-provider-file": ({}, [dep("coxswain-api"), dep("tokio"), dep("notify")]),
        "coxswain-provider-k8s": ({}, [dep("coxswain-api"), dep("kube", ["client"]),
                                       dep("coxswain-stream")]),
        "coxswain-stream": ({}, [dep("coxswain-ir"), dep("tokio"), dep("hyper")]),
        "coxswain": ({}, [dep(n) for n in internal]),
        "serde": ({}, []),
        "tokio": ({}, []),
        "hyper": ({}, [dep("tokio")]),
        "notify": ({}, []),
        "k8s-openapi": ({}, [dep("serde")]),
        "gateway-api": ({}, [dep("kube", ["derive"]), dep("k8s-openapi")]),
        "kube": ({"default": [], "derive": [], "client": ["dep:kube-client"]},
                 [dep("kube-core"), dep("kube-client", optional=True)]),
        "kube-core": ({}, [dep("k8s-openapi")]),
        "kube-client": ({}, [dep("kube-core"), dep("tokio"), dep("hyper")]),
    }


def write_metadata(path, pk):
    packages, nodes = [], []
    for name, (features, deps) in sorted(pk.items()):
        packages.append({
            "id": pkg_id(name), "name": name, "version": "1.0.0", "features": features,
            "dependencies": [{"name": d, "rename": None, "kind": kind, "optional": opt,
                              "uses_default_features": True, "features": feats}
                             for d, opt, feats, kind in deps],
        })
        # The unified resolve lists every dependency some crate activates.
        nodes.append({"id": pkg_id(name), "deps": [
            {"name": d.replace("-", "_"), "pkg": pkg_id(d),
             "dep_kinds": [{"kind": kind, "target": None}]}
            for d, opt, feats, kind in deps]})
    members = sorted(pkg_id(n) for n in pk if n.startswith("coxswain"))
    with open(path, "w") as f:
        # One package or node per line: small diffs, readable fixtures.
        f.write('{"version": 1,\n "workspace_members": ' + json.dumps(members) + ',\n')
        f.write(' "packages": [\n  ' + ',\n  '.join(json.dumps(p) for p in packages) + '\n ],\n')
        f.write(' "resolve": {"root": null, "nodes": [\n  ')
        f.write(',\n  '.join(json.dumps(n) for n in nodes) + '\n ]}}\n')


def emit(name, pk, expect, proxy_src=None):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    if pk is not None:
        write_metadata(os.path.join(d, "metadata.json"), pk)
    with open(os.path.join(d, "expect"), "w") as f:
        f.write(expect + "\n")
    if proxy_src is not None:
        os.makedirs(os.path.join(d, "proxy-src"), exist_ok=True)
        with open(os.path.join(d, "proxy-src", "lib.rs"), "w") as f:
            f.write(proxy_src)


def with_dep(crate, *deps, extra=None):
    """The base workspace where `crate` also declares `deps`."""
    pk = base()
    pk.update(extra or {})
    pk[crate][1].extend(deps)
    return pk


GOOD_SRC = """//! Fixture: a proxy crate that obeys the source rule. Prose about
//! std::sync::Mutex in a comment is not a finding, nor are other types.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct Counter(Arc<AtomicU64>);

impl Counter {
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed); // not a std::sync::Mutex
    }
}
"""


def main():
    emit("pass-workspace", base(), "pass", GOOD_SRC)
    emit("pass-proxy-mutex-justified", base(), "pass",
         "//! Fixture: a lock the author showed is off the request path.\n"
         "use std::sync::Mutex; // lock-ok: taken only when a listener is removed\n\n"
         "pub static DRAINING: Mutex<Vec<u64>> = Mutex::new(Vec::new());\n")
    emit("pass-dev-dependency-only",
         with_dep("coxswain-proxy", dep("coxswain-translate", kind="dev")), "pass")
    emit("fail-ir-internal-dep", with_dep("coxswain-ir", dep("coxswain-api")),
         "fail: coxswain-ir must not depend on coxswain-api")
    emit("fail-translate-tokio-transitive",
         with_dep("coxswain-translate", dep("helper-util"),
                  extra={"helper-util": ({}, [dep("tokio")])}),
         "fail: coxswain-translate -> helper-util -> tokio")
    emit("fail-translate-notify", with_dep("coxswain-translate", dep("notify")),
         "fail: coxswain-translate must not depend on notify")
    emit("fail-translate-kube-client", with_dep("coxswain-translate", dep("kube", ["client"])),
         "fail: coxswain-translate must not depend on kube-client")
    emit("fail-proxy-api", with_dep("coxswain-proxy", dep("coxswain-api")),
         "fail: coxswain-proxy must not depend on coxswain-api")
    emit("fail-proxy-translate", with_dep("coxswain-proxy", dep("coxswain-translate")),
         "fail: coxswain-proxy must not depend on coxswain-translate")
    emit("fail-proxy-gateway-api-transitive",
         with_dep("coxswain-proxy", dep("route-helpers"),
                  extra={"route-helpers": ({}, [dep("gateway-api")])}),
         "fail: coxswain-proxy -> route-helpers -> gateway-api")
    emit("fail-proxy-k8s-openapi", with_dep("coxswain-proxy", dep("k8s-openapi")),
         "fail: coxswain-proxy must not depend on k8s-openapi")
    emit("fail-proxy-kube-core", with_dep("coxswain-proxy", dep("kube-core")),
         "fail: coxswain-proxy must not depend on kube-core")
    emit("fail-stream-api", with_dep("coxswain-stream", dep("coxswain-api")),
         "fail: coxswain-stream must not depend on coxswain-api")
    emit("fail-stream-proxy", with_dep("coxswain-stream", dep("coxswain-proxy")),
         "fail: coxswain-stream must not depend on coxswain-proxy")
    emit("fail-provider-proxy", with_dep("coxswain-provider-file", dep("coxswain-proxy")),
         "fail: coxswain-provider-file must not depend on coxswain-proxy")

    renamed = {name: (features, [d for d in deps if d[0] != "coxswain-ir"])
               for name, (features, deps) in base().items() if name != "coxswain-ir"}
    renamed["coxswain-core-ir"] = ({}, [])
    emit("fail-renamed-crate", renamed, "fail: coxswain-ir: not a workspace member")

    emit("fail-proxy-std-mutex", None, "fail: lib.rs:3: std::sync::Mutex in the proxy",
         "//! Fixture: a lock on the data plane.\n\nuse std::sync::Mutex;\n\n"
         "pub static HITS: Mutex<u64> = Mutex::new(0);\n")
    emit("fail-proxy-std-mutex-grouped", None, "fail: lib.rs:2: std::sync::Mutex in the proxy",
         "//! Fixture: the lock hidden in a grouped import.\nuse std::sync::{\n    Arc,\n"
         "    Mutex,\n};\n\npub type Shared = Arc<Mutex<u64>>;\n")


if __name__ == "__main__":
    main()
