//! `translate`: arbitrary multi-document YAML (or JSON, which is YAML) as
//! Kubernetes objects, through `coxswain_translate::translate`.
//!
//! The documents are decoded much as the golden tests do it
//! (`crates/translate/tests/golden_support/load.rs`): each document to JSON,
//! namespace defaulted, then typed by `apiVersion`/`kind`; documents that do
//! not decode are dropped and the rest still go in, and nothing is validated
//! (the translator promises to never panic on any input).
//!
//! Properties:
//! - never panics;
//! - every status condition has a non-empty type, a non-empty reason, a
//!   status of `True`/`False`/`Unknown`, and its type only once per list;
//! - deterministic: translating twice gives equal IR and statuses;
//! - `Translator` (the memoising one) agrees with `translate`, both cold and
//!   after it has seen the snapshot without its last object;
//! - the IR keeps its documented order (sockets by transport/address/port,
//!   clusters by name), every route has a match, every cluster a backend
//!   names exists, every route match compiles in the proxy and
//!   `Router::compile` keeps every HTTP route (none is skipped as
//!   uncompilable), the IR's JSON is a fixpoint of a round trip, and no
//!   private key shows in it.

use std::collections::BTreeSet;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{ApiObject, Kind, KindVisitor, Object, Snapshot};
use coxswain_ir::{BackendTarget, Config, REDACTED_KEY, Serve, Transport};
use coxswain_proxy::router::{CompiledMatch, Router};
use coxswain_translate::{DEFAULT_CONTROLLER_NAME, Options, Output, Translator, translate};
use serde_json::Value;

/// At most this many documents are used (keeps each run fast).
const MAX_DOCUMENTS: usize = 32;

pub fn options() -> Options {
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [0, 0, 0, 0].into(),
        now: Time(Timestamp::from_second(1_767_225_600).unwrap_or(Timestamp::UNIX_EPOCH)),
        ingress: Default::default(),
        // Pools on: parametersRef resolution is translator code too.
        dedicated_pools: true,
    }
}

fn kind_of(value: &Value) -> &str {
    value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn default_namespace(value: &mut Value) {
    if Kind::from_name(kind_of(value)).is_some_and(Kind::cluster_scoped) {
        return;
    }
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("namespace")
            .or_insert_with(|| Value::String("default".into()));
    }
}

fn typed(value: &Value) -> Option<Object> {
    struct Decode<'a>(&'a Value);
    impl KindVisitor for Decode<'_> {
        type Output = Option<Object>;
        fn visit<T: ApiObject>(self, _: Kind, wrap: fn(T) -> Object) -> Self::Output {
            serde_json::from_value(self.0.clone()).ok().map(wrap)
        }
    }
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Kind::recognise(api_version, kind_of(value))?.visit(Decode(value))
}

/// `text` split into YAML documents at `---` lines. (serde_yaml_ng's
/// multi-document `Deserializer` panics after some errors, e.g. on `- *v`,
/// an undefined alias, so every document is parsed on its own, as the file
/// provider does.)
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.starts_with("---") {
            docs.push(line.get(3..).unwrap_or_default().to_string());
        } else if let Some(last) = docs.last_mut() {
            last.push_str(line);
        }
    }
    docs
}

/// Every document of `text` that decodes into an object we know.
pub fn parse_objects(text: &str) -> Vec<Object> {
    let mut objects = Vec::new();
    for document in documents(text).iter().take(MAX_DOCUMENTS) {
        let Ok(yaml) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(document) else {
            continue;
        };
        let Ok(mut value) = serde_json::to_value(&yaml) else {
            continue;
        };
        default_namespace(&mut value);
        if let Some(object) = typed(&value) {
            objects.push(object);
        }
    }
    objects
}

fn snapshot_of(objects: &[Object]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for o in objects {
        snapshot.insert(o.clone());
    }
    snapshot
}

/// Every `conditions` list anywhere in a status.
fn check_conditions(value: &Value, at: &str) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if key == "conditions" {
                    let Some(list) = v.as_array() else {
                        panic!("{at}: conditions is not a list: {v}");
                    };
                    let mut types = BTreeSet::new();
                    for c in list {
                        let field = |name: &str| c.get(name).and_then(Value::as_str).unwrap_or("");
                        assert!(
                            !field("type").is_empty(),
                            "{at}: condition without type: {c}"
                        );
                        assert!(
                            !field("reason").is_empty(),
                            "{at}: condition without reason: {c}"
                        );
                        assert!(
                            matches!(field("status"), "True" | "False" | "Unknown"),
                            "{at}: condition status: {c}"
                        );
                        assert!(
                            types.insert(field("type").to_string()),
                            "{at}: condition type twice in one list: {c}"
                        );
                    }
                } else {
                    check_conditions(v, &format!("{at}.{key}"));
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_conditions(v, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

fn check_statuses(output: &Output) {
    let s = &output.statuses;
    for (key, status) in &s.gateway_classes {
        let v = serde_json::to_value(status).unwrap_or_default();
        check_conditions(&v, &format!("GatewayClass {key}"));
    }
    for (key, status) in &s.gateways {
        let v = serde_json::to_value(status).unwrap_or_default();
        check_conditions(&v, &format!("Gateway {key}"));
    }
    for ((kind, key), status) in &s.routes {
        let v = serde_json::to_value(status.as_ref()).unwrap_or_default();
        check_conditions(&v, &format!("{kind:?} {key}"));
    }
}

fn check_ir(ir: &Config) {
    let socket_keys: Vec<_> = ir
        .sockets
        .iter()
        .map(|s| (s.transport, s.address, s.port))
        .collect();
    assert!(
        socket_keys.is_sorted(),
        "sockets not sorted by (transport, address, port): {socket_keys:?}"
    );
    let cluster_names: Vec<&str> = ir.clusters.iter().map(|c| c.name.as_str()).collect();
    assert!(
        cluster_names.is_sorted(),
        "clusters not sorted by name: {cluster_names:?}"
    );
    for socket in &ir.sockets {
        for listener in &socket.listeners {
            let (routes, l4) = match &listener.serve {
                Serve::Http(routes) => (&routes[..], &[][..]),
                Serve::TlsPassthrough(r) | Serve::Tcp(r) | Serve::Udp(r) => (&[][..], &r[..]),
            };
            let backends = routes
                .iter()
                .flat_map(|r| &r.backends)
                .chain(l4.iter().flat_map(|r| &r.backends));
            for b in backends {
                if let BackendTarget::Cluster(name) = &b.target {
                    assert!(
                        ir.cluster(name).is_some(),
                        "backend names cluster {name:?} that is not in the IR"
                    );
                }
            }
            for route in routes {
                assert!(
                    !route.matches.is_empty(),
                    "route {:?} has no match",
                    route.id
                );
                for m in &route.matches {
                    if let Err(e) = CompiledMatch::compile(m) {
                        panic!(
                            "route {:?} has a match the proxy cannot compile ({}): {m:?}",
                            route.id, e.0
                        );
                    }
                }
            }
        }
    }
    // The proxy's own compile keeps every HTTP route (it skips, with a
    // warning, a route it cannot compile): one compiled route per route of
    // each HTTP listener on a TCP socket, in order.
    let http_routes: usize = ir
        .sockets
        .iter()
        .filter(|s| s.transport == Transport::Tcp)
        .flat_map(|s| &s.listeners)
        .filter_map(|l| l.http_routes())
        .map(<[_]>::len)
        .sum();
    let router = Router::compile(ir);
    assert!(
        http_routes == 0 || router.route(http_routes - 1).is_some(),
        "the proxy compiled fewer than the IR's {http_routes} HTTP routes"
    );
    assert!(
        router.route(http_routes).is_none(),
        "the proxy compiled more than the IR's {http_routes} HTTP routes"
    );
    // Private keys serialise as a redacted marker, so the round trip is
    // checked as a fixpoint of the JSON, and the keys must not show.
    let json = serde_json::to_string(ir).unwrap_or_else(|e| panic!("IR does not serialise: {e}"));
    let back: Config =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("IR does not deserialise: {e}"));
    let again = serde_json::to_string(&back).unwrap_or_default();
    assert_eq!(json, again, "IR JSON changed in a round trip");
    let keys = ir
        .sockets
        .iter()
        .flat_map(|s| &s.listeners)
        .flat_map(|l| {
            let served = l.tls.iter().flat_map(|t| &t.certificates);
            served.chain(&l.backend_client_certificate)
        })
        .map(|c| &c.key_pem.0);
    for key in keys {
        if key.len() >= 24 && key.as_ref() != REDACTED_KEY {
            assert!(
                !json.contains(key.as_ref()),
                "a private key shows in the IR JSON"
            );
        }
    }
}

fn assert_same(a: &Output, b: &Output, what: &str) {
    assert!(a.ir == b.ir, "{what}: IR differs");
    assert!(a.statuses == b.statuses, "{what}: statuses differ");
}

pub fn check_objects(objects: &[Object]) {
    let snapshot = snapshot_of(objects);
    let options = options();
    let first = translate(&snapshot, &options);
    check_statuses(&first);
    check_ir(&first.ir);
    let second = translate(&snapshot, &options);
    assert_same(&first, &second, "translating twice");

    let mut translator = Translator::new();
    let cold = translator.translate(&snapshot, &options);
    assert_same(&first, &cold, "Translator (cold) vs translate");
    if let Some((_, rest)) = objects.split_last() {
        let mut warm = Translator::new();
        let _ = warm.translate(&snapshot_of(rest), &options);
        let after = warm.translate(&snapshot, &options);
        assert_same(
            &first,
            &after,
            "Translator (after the snapshot minus its last object) vs translate",
        );
    }
}

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_objects(&parse_objects(text));
}
