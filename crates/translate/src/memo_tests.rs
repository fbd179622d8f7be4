//! The memoising [`Translator`] must produce exactly what the pure
//! `translate` does, across any sequence of edits.

use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{
    BackendTlsPolicy, ConfigMap, EndpointSlice, Gateway, GatewayClass, HttpRoute, Namespace,
    Object, Secret, Service, Snapshot,
};
use serde_json::json;

use crate::{DEFAULT_CONTROLLER_NAME, Options, Translator, translate};

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn options() -> Options {
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [127, 0, 0, 1].into(),
        now: Time(Timestamp::UNIX_EPOCH),
        ingress: Default::default(),
        dedicated_pools: false,
    }
}

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const NAMESPACES: [&str; 2] = ["a", "b"];

fn gateway(rng: &mut Rng) -> Object {
    let hostname = ["*.example.com", "x.example.com", "other.org"][rng.below(3) as usize];
    let from = ["All", "Same"][rng.below(2) as usize];
    Object::Gateway(Arc::new(typed::<Gateway>(json!({
        "metadata": {"name": "gw", "namespace": "a"},
        "spec": {"gatewayClassName": "c", "listeners": [
            {"name": "web", "port": 80, "protocol": "HTTP", "hostname": hostname,
             "allowedRoutes": {"namespaces": {"from": from}}},
            {"name": "any", "port": 81, "protocol": "HTTP"}
        ]}
    }))))
}

fn service(ns: &str, name: &str) -> Object {
    Object::Service(Arc::new(typed::<Service>(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"ports": [{"port": 80}]}
    }))))
}

fn slice(ns: &str, name: &str, octet: u64) -> Object {
    Object::EndpointSlice(Arc::new(typed::<EndpointSlice>(json!({
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "ports": [{"port": 8080}],
        "endpoints": [{"addresses": [format!("10.0.0.{octet}")]}]
    }))))
}

fn route(rng: &mut Rng) -> Object {
    let ns = NAMESPACES[rng.below(2) as usize];
    let name = format!("r{}", rng.below(12));
    let host = ["x.example.com", "y.example.com", "nowhere.net"][rng.below(3) as usize];
    let section = ["web", "any", "missing"][rng.below(3) as usize];
    let path = ["Exact", "PathPrefix", "RegularExpression"][rng.below(3) as usize];
    let backend = ["s1", "s2", "gone"][rng.below(3) as usize];
    Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": name, "namespace": ns,
                     "creationTimestamp": format!("2026-01-01T00:00:{:02}Z", rng.below(3))},
        "spec": {
            "parentRefs": [{"name": "gw", "namespace": "a", "sectionName": section}],
            "hostnames": [host],
            "rules": [{"matches": [{"path": {"type": path, "value": format!("/p{}", rng.below(4))}}],
                       "backendRefs": [{"name": backend, "port": 80}]}]
        }
    }))))
}

/// A CA certificate (from a golden scenario).
const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBqzCCAVCgAwIBAgIUBuxHv9q5Yo+Bdu+4nF9CtMOWU4swCgYIKoZIzj0EAwIw\nFjEUMBIGA1UEAwwLZXhhbXBsZS5jb20wIBcNMjYxMTMwMDI0MTQ1WhgPMjEyNjEx\nMDYwMjQxNDVaMBYxFDASBgNVBAMMC2V4YW1wbGUuY29tMFkwEwYHKoZIzj0CAQYI\nKoZIzj0DAQcDQgAE9+NnTTuHMy1lxbuUbx5oToTYneeKbShQ9gvgc8y6ULqr4HXR\n5Ho7nYztIYCnj1aspfSIM/jDBwiWibL5c2NBcKN6MHgwHQYDVR0OBBYEFJlX1gn3\nenEKdWeuOsfjY+QFO/hWMB8GA1UdIwQYMBaAFJlX1gn3enEKdWeuOsfjY+QFO/hW\nMA8GA1UdEwEB/wQFMAMBAf8wJQYDVR0RBB4wHIILZXhhbXBsZS5jb22CDSouZXhh\nbXBsZS5jb20wCgYIKoZIzj0EAwIDSQAwRgIhAKOh6OAzNCmrpDS7A/sh+DtIv6ue\nC7Qzz/1wwC0ZlD2XAiEAhx5WmpYHXp23m8EwUOrLZH7gyo9R4ab77dpw3WJL1Zk=\n-----END CERTIFICATE-----\n";

/// A BackendTLSPolicy for `s1` or `s2` whose CA sits in a ConfigMap or a
/// Secret named `ca`.
fn policy(rng: &mut Rng) -> Object {
    let ns = NAMESPACES[rng.below(2) as usize];
    let service = ["s1", "s2"][rng.below(2) as usize];
    let holder = ["ConfigMap", "Secret"][rng.below(2) as usize];
    Object::BackendTlsPolicy(Arc::new(typed::<BackendTlsPolicy>(json!({
        "metadata": {"name": format!("p-{service}"), "namespace": ns},
        "spec": {
            "targetRefs": [{"group": "", "kind": "Service", "name": service}],
            "validation": {"hostname": "b.example.com",
                           "caCertificateRefs": [{"group": "", "kind": holder, "name": "ca"}]}
        }
    }))))
}

/// A ConfigMap or Secret `ca` holding a CA, or nothing usable.
fn ca_holder(rng: &mut Rng) -> Object {
    let ns = NAMESPACES[rng.below(2) as usize];
    let pem = if rng.below(2) == 0 { CA_PEM } else { "" };
    let meta = json!({"name": "ca", "namespace": ns});
    if rng.below(2) == 0 {
        Object::ConfigMap(Arc::new(typed::<ConfigMap>(
            json!({"metadata": meta, "data": {"ca.crt": pem}}),
        )))
    } else {
        Object::Secret(Arc::new(typed::<Secret>(
            json!({"metadata": meta, "stringData": {"ca.crt": pem}}),
        )))
    }
}

/// One random edit: mostly routes, sometimes the rest of the world.
fn edit(s: &mut Snapshot, rng: &mut Rng) {
    match rng.below(12) {
        10 => s.insert(policy(rng)),
        11 => s.insert(ca_holder(rng)),
        0..=4 => s.insert(route(rng)),
        5 => {
            let key = s.http_routes.keys().nth(rng.below(13) as usize).cloned();
            if let Some(key) = key {
                s.remove(coxswain_api::Kind::HttpRoute, &key);
            }
        }
        6 => s.insert(gateway(rng)),
        7 => {
            let ns = NAMESPACES[rng.below(2) as usize];
            let name = ["s1", "s2"][rng.below(2) as usize];
            if rng.below(2) == 0 {
                s.insert(service(ns, name));
            } else {
                s.remove(coxswain_api::Kind::Service, &coxswain_api::ObjectKey::new(ns, name));
            }
        }
        8 => {
            let ns = NAMESPACES[rng.below(2) as usize];
            s.insert(slice(ns, ["s1", "s2"][rng.below(2) as usize], rng.below(250)));
        }
        _ => s.insert(Object::Namespace(Arc::new(typed::<Namespace>(json!({
            "metadata": {"name": NAMESPACES[rng.below(2) as usize], "labels": {"v": rng.below(3).to_string()}}
        }))))),
    }
}

#[test]
fn memoised_output_equals_pure_output_across_random_edits() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut s = Snapshot::default();
        s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
            json!({
                "metadata": {"name": "c"},
                "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
            }),
        ))));
        s.insert(gateway(&mut rng));
        for ns in NAMESPACES {
            s.insert(service(ns, "s1"));
            s.insert(service(ns, "s2"));
        }
        let mut translator = Translator::new();
        for step in 0..60 {
            edit(&mut s, &mut rng);
            let memoised = translator.translate(&s, &options());
            let pure = translate(&s, &options());
            assert_eq!(memoised.ir, pure.ir, "seed {seed} step {step}: IR differs");
            assert_eq!(
                memoised.statuses, pure.statuses,
                "seed {seed} step {step}: statuses differ"
            );
        }
    }
}

#[test]
fn an_unchanged_route_keeps_its_ir_identity() {
    let mut rng = Rng(7);
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "c"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    ))));
    s.insert(gateway(&mut rng));
    s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": "keep", "namespace": "a"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "a", "sectionName": "any"}]}
    })))));
    let mut translator = Translator::new();
    let first = translator.translate(&s, &options());
    s.insert(route(&mut rng));
    let second = translator.translate(&s, &options());
    let find = |out: &crate::Output| {
        out.ir
            .sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .flat_map(|l| l.http_routes().unwrap_or_default())
            .find(|r| r.id.name == "keep")
            .cloned()
            .unwrap()
    };
    assert!(Arc::ptr_eq(&find(&first), &find(&second)));
}

#[test]
fn a_status_write_back_of_the_gateway_keeps_every_route() {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "c"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    ))));
    let gateway = |version: &str, status: serde_json::Value, port: u16| {
        Object::Gateway(Arc::new(typed::<Gateway>(json!({
            "metadata": {"name": "gw", "namespace": "a", "resourceVersion": version},
            "spec": {"gatewayClassName": "c", "listeners": [
                {"name": "web", "port": port, "protocol": "HTTP"}
            ]},
            "status": status
        }))))
    };
    s.insert(gateway("1", json!({}), 80));
    s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": "keep", "namespace": "a"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "a"}]}
    })))));
    let find = |out: &crate::Output| {
        out.ir
            .sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .flat_map(|l| l.http_routes().unwrap_or_default())
            .find(|r| r.id.name == "keep")
            .cloned()
            .unwrap()
    };
    let mut translator = Translator::new();
    let first = find(&translator.translate(&s, &options()));
    // What the watch delivers after our status write: a new object, a new
    // resourceVersion, the same spec.
    let written = json!({"listeners": [{"name": "web", "attachedRoutes": 1,
        "supportedKinds": [], "conditions": []}]});
    s.insert(gateway("2", written.clone(), 80));
    let second = find(&translator.translate(&s, &options()));
    assert!(
        Arc::ptr_eq(&first, &second),
        "a status change recomputed the route"
    );
    // Likewise the route's own status write-back.
    s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": "keep", "namespace": "a", "resourceVersion": "9"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "a"}]},
        "status": {"parents": []}
    })))));
    let again = find(&translator.translate(&s, &options()));
    assert!(
        Arc::ptr_eq(&first, &again),
        "a route status change recomputed it"
    );
    // A change of the spec is a change.
    s.insert(gateway("3", written, 8080));
    let third = find(&translator.translate(&s, &options()));
    assert!(
        !Arc::ptr_eq(&second, &third),
        "a spec change kept the old route"
    );
}

#[test]
fn a_ca_edit_in_a_secret_reaches_the_memoised_clusters() {
    use coxswain_ir::UpstreamTls;
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({"metadata": {"name": "c"}, "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}}),
    ))));
    let mut rng = Rng(1);
    s.insert(gateway(&mut rng));
    s.insert(service("a", "s1"));
    s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": "r", "namespace": "a"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "a", "sectionName": "any"}],
                 "rules": [{"backendRefs": [{"name": "s1", "port": 80}]}]}
    })))));
    let policy = json!({
        "metadata": {"name": "p", "namespace": "a"},
        "spec": {"targetRefs": [{"group": "", "kind": "Service", "name": "s1"}],
                 "validation": {"hostname": "b.example.com",
                                "caCertificateRefs": [{"group": "", "kind": "Secret", "name": "ca"}]}}
    });
    s.insert(Object::BackendTlsPolicy(Arc::new(
        typed::<BackendTlsPolicy>(policy),
    )));
    let secret = |pem: &str| {
        Object::Secret(Arc::new(typed::<Secret>(json!({
            "metadata": {"name": "ca", "namespace": "a"}, "stringData": {"ca.crt": pem}
        }))))
    };
    let mut translator = Translator::new();
    s.insert(secret(""));
    let tls =
        |t: &mut Translator, s: &Snapshot| t.translate(s, &options()).ir.clusters[0].tls.clone();
    assert!(matches!(
        tls(&mut translator, &s),
        Some(UpstreamTls::Invalid { .. })
    ));
    s.insert(secret(CA_PEM));
    assert!(matches!(
        tls(&mut translator, &s),
        Some(UpstreamTls::Verify(_))
    ));
}

/// CoxswainGatewayParameters are not route inputs, yet whether one exists
/// decides if its Gateway is usable: routes follow that, and only that.
#[test]
fn parameters_that_make_a_gateway_unusable_recompute_its_routes() {
    use coxswain_api::CoxswainGatewayParameters;
    let options = Options {
        dedicated_pools: true,
        ..options()
    };
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({"metadata": {"name": "c"}, "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}}),
    ))));
    s.insert(Object::Gateway(Arc::new(typed::<Gateway>(json!({
        "metadata": {"name": "gw", "namespace": "a"},
        "spec": {"gatewayClassName": "c",
                 "infrastructure": {"parametersRef": {"group": "gateway.coxswain-labs.dev",
                     "kind": "CoxswainGatewayParameters", "name": "pool"}},
                 "listeners": [{"name": "web", "port": 80, "protocol": "HTTP"}]}
    })))));
    s.insert(Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": "r", "namespace": "a"},
        "spec": {"parentRefs": [{"name": "gw", "namespace": "a"}]}
    })))));
    let parameters = |replicas: i32| {
        Object::CoxswainGatewayParameters(Arc::new(typed::<CoxswainGatewayParameters>(json!({
            "metadata": {"name": "pool", "namespace": "a"},
            "spec": {"replicas": replicas}
        }))))
    };
    let routes = |out: &crate::Output| -> Vec<Arc<coxswain_ir::Route>> {
        out.ir
            .sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .flat_map(|l| l.http_routes().unwrap_or_default())
            .cloned()
            .collect()
    };
    let mut translator = Translator::new();
    let missing = translator.translate(&s, &options);
    assert!(
        routes(&missing).is_empty(),
        "parameters missing: not served"
    );
    assert_eq!(missing.statuses, translate(&s, &options).statuses);

    s.insert(parameters(1));
    let found = translator.translate(&s, &options);
    assert_eq!(routes(&found).len(), 1, "parameters created: served");
    assert_eq!(found.statuses, translate(&s, &options).statuses);
    assert_eq!(found.dedicated.keys().collect::<Vec<_>>(), ["a/gw"]);

    s.insert(parameters(3));
    let resized = translator.translate(&s, &options);
    assert!(
        Arc::ptr_eq(&routes(&found)[0], &routes(&resized)[0]),
        "a replicas change recomputed the route"
    );
    assert_eq!(resized.dedicated["a/gw"].spec.replicas, Some(3));
}

/// A route to `backend` on the Gateway's listener "any".
fn route_to(name: &str, path: &str, backend: &str) -> Object {
    Object::HttpRoute(Arc::new(typed::<HttpRoute>(json!({
        "metadata": {"name": name, "namespace": "a"},
        "spec": {
            "parentRefs": [{"name": "gw", "namespace": "a", "sectionName": "any"}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": path}}],
                "backendRefs": [{"name": backend, "port": 80}]
            }]
        }
    }))))
}

/// Routes recomputed in later passes share the cluster spec of the routes
/// left alone, and a spec no route holds is forgotten: churn never grows
/// towards a copy per route.
#[test]
fn routes_share_cluster_specs_across_passes() {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(typed::<GatewayClass>(
        json!({
            "metadata": {"name": "c"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }),
    ))));
    s.insert(gateway(&mut Rng(7)));
    for name in ["s1", "s2"] {
        s.insert(service("a", name));
        s.insert(slice("a", name, 1));
    }
    for name in ["r0", "r1", "r2"] {
        s.insert(route_to(name, "/", "s1"));
    }
    let mut translator = Translator::new();
    translator.translate(&s, &options());
    assert_eq!(translator.cluster_copies(), (1, 1));

    s.insert(route_to("r0", "/edited", "s1"));
    translator.translate(&s, &options());
    assert_eq!(
        translator.cluster_copies(),
        (1, 1),
        "an edited route shares s1"
    );

    s.insert(route_to("r1", "/", "s2"));
    translator.translate(&s, &options());
    assert_eq!(translator.cluster_copies(), (2, 2));

    s.insert(route_to("r0", "/", "s2"));
    s.insert(route_to("r2", "/", "s2"));
    translator.translate(&s, &options());
    assert_eq!(
        translator.cluster_copies(),
        (1, 1),
        "s1's spec is forgotten"
    );
}
