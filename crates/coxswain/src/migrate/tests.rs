//! The conversion as pure logic: manifests in, Gateway API objects and
//! report out.

use std::sync::Arc;

use coxswain_api::{Ingress, Object, Service, Snapshot};
use serde_json::{Value, json};

use super::convert::{Migration, Settings, convert};
use super::report::Severity;

pub fn settings() -> Settings {
    Settings {
        ingress_class: None,
        gateway_class: "coxswain".into(),
        controller_name: "coxswain-labs.dev/gateway-controller".into(),
        gateway_name: "ingress".into(),
        gateway_namespace: None,
        http_port: 80,
        https_port: 443,
    }
}

pub fn snapshot(ingresses: &[&str], services: &[&str]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for text in ingresses {
        let ingress: Ingress = serde_yaml_ng::from_str(text).unwrap();
        snapshot.insert(Object::Ingress(Arc::new(ingress)));
    }
    for text in services {
        let service: Service = serde_yaml_ng::from_str(text).unwrap();
        snapshot.insert(Object::Service(Arc::new(service)));
    }
    snapshot
}

pub fn objects(migration: &Migration, kind: &str) -> Vec<Value> {
    migration
        .documents
        .iter()
        .filter(|d| d.object["kind"] == kind)
        .map(|d| d.object.clone())
        .collect()
}

pub fn findings(migration: &Migration) -> Vec<(Severity, String, String)> {
    migration
        .report
        .ingresses
        .values()
        .flatten()
        .map(|f| (f.severity, f.at.clone(), f.why.clone()))
        .collect()
}

const SITE: &str = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: site, namespace: shop, creationTimestamp: '2024-01-01T00:00:00Z'}
spec:
  tls:
  - hosts: [secure.test]
    secretName: site-cert
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - host: exact.test
    http:
      paths:
      - {path: /exact, pathType: Exact, backend: {service: {name: web, port: {number: 8080}}}}
      - {path: /app, pathType: ImplementationSpecific, backend: {service: {name: web, port: {name: http}}}}
  - host: secure.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 8080}}}}
";

const WEB: &str = "
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  ports: [{name: http, port: 8080}]
";

#[test]
fn hosts_become_routes_and_tls_hosts_listeners() {
    let migration = convert(&snapshot(&[SITE], &[WEB]), &settings());
    let gateway = &objects(&migration, "Gateway")[0];
    assert_eq!(gateway["metadata"]["namespace"], "shop");
    assert_eq!(
        gateway["spec"]["listeners"],
        json!([
            {"name": "http", "protocol": "HTTP", "port": 80,
             "allowedRoutes": {"namespaces": {"from": "All"}}},
            {"name": "https-secure.test", "protocol": "HTTPS", "port": 443,
             "hostname": "secure.test",
             "tls": {"mode": "Terminate", "certificateRefs": [
                 {"group": "", "kind": "Secret", "name": "site-cert", "namespace": "shop"}]},
             "allowedRoutes": {"namespaces": {"from": "All"}}},
        ])
    );
    let routes = objects(&migration, "HTTPRoute");
    let names: Vec<&str> = routes
        .iter()
        .map(|r| r["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "site-exact.test",
            "site-secure.test",
            "site-default-backend"
        ]
    );
    assert_eq!(routes[0]["spec"]["hostnames"], json!(["exact.test"]));
    assert_eq!(
        routes[0]["spec"]["rules"],
        json!([
            {"matches": [{"path": {"type": "Exact", "value": "/exact"}}],
             "backendRefs": [{"name": "web", "port": 8080}]},
            // The port name resolved through the Service.
            {"matches": [{"path": {"type": "PathPrefix", "value": "/app"}}],
             "backendRefs": [{"name": "web", "port": 8080}]},
        ])
    );
    assert!(routes[2]["spec"].get("hostnames").is_none());
    assert_eq!(
        routes[2]["spec"]["parentRefs"],
        json!([{"name": "ingress", "namespace": "shop"}])
    );
    // The fallback Service and the Secret are not in the input: noted only.
    assert!(!migration.report.anything_lost(), "{}", migration.report);
}

#[test]
fn wildcards_and_unresolved_ports_are_reported() {
    let ingress = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: wild, namespace: default}
spec:
  rules:
  - host: '*.wild.test'
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: grpc}}}}
";
    let migration = convert(&snapshot(&[ingress], &[]), &settings());
    let found = findings(&migration);
    assert!(migration.report.anything_lost());
    assert!(
        found.iter().any(|(s, at, why)| *s == Severity::Lost
            && at == "rules[0].host"
            && why.contains("exactly one label")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|(s, at, why)| *s == Severity::Lost
            && at == "rules[0].http.paths[0]"
            && why.contains("answers 500")),
        "{found:?}"
    );
    let route = &objects(&migration, "HTTPRoute")[0];
    assert_eq!(route["metadata"]["name"], "wild-wildcard.wild.test");
    assert_eq!(route["spec"]["rules"][0]["backendRefs"], json!([]));
}

#[test]
fn what_an_older_ingress_shadows_is_left_out() {
    let older = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a, namespace: default, creationTimestamp: '2024-01-01T00:00:00Z'}
spec:
  defaultBackend: {service: {name: one, port: {number: 80}}}
  rules:
  - host: x.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: one, port: {number: 80}}}}
";
    let younger = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: default, creationTimestamp: '2025-01-01T00:00:00Z'}
spec:
  defaultBackend: {service: {name: two, port: {number: 80}}}
  rules:
  - host: x.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: two, port: {number: 80}}}}
      - {path: /b, pathType: Prefix, backend: {service: {name: two, port: {number: 80}}}}
";
    // Input order does not matter: age does.
    let migration = convert(&snapshot(&[younger, older], &[]), &settings());
    let routes = objects(&migration, "HTTPRoute");
    let names: Vec<&str> = routes
        .iter()
        .map(|r| r["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a-x.test", "a-default-backend", "b-x.test"]);
    assert_eq!(
        routes[2]["spec"]["rules"],
        json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/b"}}],
                "backendRefs": [{"name": "two", "port": 80}]}])
    );
    let found = findings(&migration);
    assert!(
        found
            .iter()
            .any(|(s, at, _)| *s == Severity::Note && at == "rules[0].http.paths[0]"),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(_, at, why)| at == "defaultBackend" && why.contains("default/a")),
        "{found:?}"
    );
}

#[test]
fn secrets_in_other_namespaces_get_a_reference_grant() {
    let one = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a, namespace: one}
spec:
  tls: [{hosts: [a.test], secretName: a}]
";
    let two = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: two}
spec:
  tls: [{secretName: b}]
";
    let migration = convert(&snapshot(&[one, two], &[]), &settings());
    let gateway = &objects(&migration, "Gateway")[0];
    assert_eq!(gateway["metadata"]["namespace"], "default");
    assert_eq!(gateway["spec"]["listeners"][2]["name"], "https");
    assert!(gateway["spec"]["listeners"][2].get("hostname").is_none());
    let grants = objects(&migration, "ReferenceGrant");
    let namespaces: Vec<&str> = grants
        .iter()
        .map(|g| g["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["one", "two"]);
}

#[test]
fn unknown_annotations_are_reported() {
    let ingress = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: a
  annotations: {nginx.ingress.kubernetes.io/server-snippet: 'return 200;', team: shop}
spec: {}
";
    let migration = convert(&snapshot(&[ingress], &[]), &settings());
    let found = findings(&migration);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, "nginx.ingress.kubernetes.io/server-snippet");
}
