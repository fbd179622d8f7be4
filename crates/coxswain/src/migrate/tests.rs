//! The conversion as pure logic: manifests in, Gateway API objects and
//! report out.

use std::sync::Arc;

use coxswain_api::{Ingress, Object, Service, Snapshot};
use serde_json::{Value, json};

use super::convert::{Migration, Settings, convert};
use super::report::Severity;

fn settings() -> Settings {
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

fn snapshot(ingresses: &[&str], services: &[&str]) -> Snapshot {
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

fn objects(migration: &Migration, kind: &str) -> Vec<Value> {
    migration
        .documents
        .iter()
        .filter(|d| d.object["kind"] == kind)
        .map(|d| d.object.clone())
        .collect()
}

fn findings(migration: &Migration) -> Vec<(Severity, String, String)> {
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

fn annotated(name: &str, annotations: &str, host: &str, service: &str) -> String {
    format!(
        "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
  namespace: default
  annotations: {{{annotations}}}
spec:
  tls: [{{hosts: [{host}], secretName: cert}}]
  rules:
  - host: {host}
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}
"
    )
}

fn route_named(migration: &Migration, name: &str) -> Value {
    objects(migration, "HTTPRoute")
        .into_iter()
        .find(|r| r["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no route {name}"))
}

#[test]
fn security_annotations_become_filters_and_resources() {
    let ingress = annotated(
        "admin",
        "nginx.ingress.kubernetes.io/auth-type: basic, \
         nginx.ingress.kubernetes.io/auth-secret: users, \
         nginx.ingress.kubernetes.io/denylist-source-range: 10.0.0.0/8, \
         ingress.coxswain-labs.dev/max-body-size: 2k",
        "a.test",
        "web",
    );
    let migration = convert(&snapshot(&[&ingress], &[]), &settings());
    assert!(!migration.report.anything_lost(), "{}", migration.report);
    let rule = &route_named(&migration, "admin-a.test")["spec"]["rules"][0];
    let kinds: Vec<&str> = rule["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["extensionRef"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["IpAccessControl", "BasicAuth", "RequestSizeLimit"]);
    assert_eq!(
        objects(&migration, "IpAccessControl")[0]["spec"],
        json!({"allow": [], "deny": ["10.0.0.0/8"]})
    );
    assert_eq!(
        objects(&migration, "BasicAuth")[0]["spec"],
        json!({"secretRef": {"name": "users"}})
    );
    assert_eq!(
        objects(&migration, "RequestSizeLimit")[0]["spec"],
        json!({"maxSize": "2048"})
    );
}

#[test]
fn unenforceable_security_annotations_fail_closed() {
    let ingress = annotated(
        "admin",
        "nginx.ingress.kubernetes.io/auth-type: digest, \
         nginx.ingress.kubernetes.io/auth-secret: users",
        "a.test",
        "web",
    );
    let migration = convert(&snapshot(&[&ingress], &[]), &settings());
    assert!(migration.report.anything_lost());
    let rule = &route_named(&migration, "admin-a.test")["spec"]["rules"][0];
    assert_eq!(rule["backendRefs"], json!([]));
    assert!(rule.get("filters").is_none(), "{rule}");
}

#[test]
fn ssl_redirect_splits_the_host_between_listeners() {
    let ingress = annotated(
        "shop",
        "nginx.ingress.kubernetes.io/ssl-redirect: 'true'",
        "shop.test",
        "web",
    );
    let mut settings = settings();
    settings.https_port = 8443;
    let migration = convert(&snapshot(&[&ingress], &[]), &settings);
    let served = route_named(&migration, "shop-shop.test");
    assert_eq!(
        served["spec"]["parentRefs"],
        json!([{"name": "ingress", "namespace": "default", "sectionName": "https-shop.test"}])
    );
    let redirect = route_named(&migration, "shop-shop.test-ssl-redirect");
    assert_eq!(
        redirect["spec"]["parentRefs"][0]["sectionName"],
        json!("http")
    );
    assert_eq!(
        redirect["spec"]["rules"][0]["filters"],
        json!([{"type": "RequestRedirect",
                "requestRedirect": {"scheme": "https", "statusCode": 308, "port": 8443}}])
    );
}

#[test]
fn canaries_join_the_older_rule() {
    let main = annotated("site", "team: shop", "s.test", "web");
    let canary = annotated(
        "site-canary",
        "nginx.ingress.kubernetes.io/canary: 'true', \
         nginx.ingress.kubernetes.io/canary-weight: '20', \
         nginx.ingress.kubernetes.io/canary-by-header: X-Beta",
        "s.test",
        "beta",
    );
    let migration = convert(&snapshot(&[&main, &canary], &[]), &settings());
    assert!(!migration.report.anything_lost(), "{}", migration.report);
    // The canary's own route is not written: it joined the main rule.
    assert_eq!(objects(&migration, "HTTPRoute").len(), 1);
    let rules = &route_named(&migration, "site-s.test")["spec"]["rules"];
    assert_eq!(
        rules[0]["matches"][0]["headers"],
        json!([{"name": "x-beta", "value": "always"}])
    );
    assert_eq!(
        rules[0]["backendRefs"],
        json!([{"name": "beta", "port": 80}])
    );
    assert_eq!(
        rules[1]["matches"][0]["headers"],
        json!([{"name": "x-beta", "value": "never"}])
    );
    assert_eq!(
        rules[2]["backendRefs"],
        json!([{"name": "web", "port": 80, "weight": 80},
               {"name": "beta", "port": 80, "weight": 20}])
    );
}

#[test]
fn regex_rewrites_and_unmappable_settings() {
    let ingress = annotated(
        "assets",
        "nginx.ingress.kubernetes.io/use-regex: 'true', \
         nginx.ingress.kubernetes.io/rewrite-target: /$1, \
         nginx.ingress.kubernetes.io/backend-protocol: HTTPS, \
         nginx.ingress.kubernetes.io/proxy-read-timeout: '90'",
        "cdn.test",
        "files",
    );
    let migration = convert(&snapshot(&[&ingress], &[]), &settings());
    let rule = &route_named(&migration, "assets-cdn.test")["spec"]["rules"][0];
    assert_eq!(
        rule["matches"][0]["path"],
        json!({"type": "RegularExpression", "value": "(?i:/).*"})
    );
    assert_eq!(rule["timeouts"], json!({"backendRequest": "90s"}));
    assert_eq!(
        objects(&migration, "PathRewriteRegex")[0]["spec"],
        json!({"pattern": "^(?:(?i:/).*)$", "substitution": "/${1}"})
    );
    let found = findings(&migration);
    assert!(
        found.iter().any(|(s, at, why)| *s == Severity::Lost
            && at == "backend-protocol"
            && why.contains("BackendTLSPolicy")),
        "{found:?}"
    );
}

#[test]
fn regex_paths_of_two_ingresses_on_one_host_are_reported() {
    let a = annotated(
        "a",
        "nginx.ingress.kubernetes.io/use-regex: 'true'",
        "r.test",
        "one",
    );
    let b = annotated(
        "b",
        "nginx.ingress.kubernetes.io/use-regex: 'true'",
        "r.test",
        "two",
    )
    .replace("path: /,", "path: /a,");
    let migration = convert(&snapshot(&[&a, &b], &[]), &settings());
    let found = findings(&migration);
    let ties: Vec<_> = found
        .iter()
        .filter(|(s, _, why)| *s == Severity::Lost && why.contains("older HTTPRoute"))
        .collect();
    assert_eq!(ties.len(), 1, "{found:?}");
    assert!(
        migration.report.ingresses[&coxswain_api::ObjectKey::new("default", "b")]
            .iter()
            .any(|f| f.why.contains("older HTTPRoute"))
    );
}

#[test]
fn a_canary_keeps_its_certificate_and_policies_but_not_its_filters() {
    let main = annotated("site", "team: shop", "s.test", "web");
    let canary = annotated(
        "site-canary",
        "nginx.ingress.kubernetes.io/canary: 'true', \
         nginx.ingress.kubernetes.io/load-balance: ewma, \
         nginx.ingress.kubernetes.io/proxy-body-size: 1k",
        "s.test",
        "beta",
    )
    .replace("hosts: [s.test]", "hosts: [beta.s.test]");
    let migration = convert(&snapshot(&[&main, &canary], &[]), &settings());
    let listeners = &objects(&migration, "Gateway")[0]["spec"]["listeners"];
    assert_eq!(listeners[2]["hostname"], "beta.s.test");
    let policies = objects(&migration, "CoxswainBackendPolicy");
    assert_eq!(policies.len(), 1);
    assert_eq!(policies[0]["spec"]["targetRefs"][0]["name"], "beta");
    assert!(objects(&migration, "RequestSizeLimit").is_empty());
    let found = findings(&migration);
    assert!(
        found
            .iter()
            .any(|(s, at, _)| *s == Severity::Note && at == "annotations"),
        "{found:?}"
    );
}

#[test]
fn nginx_defaults_and_paths_gateway_api_refuses_are_reported() {
    let ingress =
        annotated("site", "team: shop", "s.test", "web").replace("path: /,", "path: '/a|b',");
    let migration = convert(&snapshot(&[&ingress], &[]), &settings());
    let found = findings(&migration);
    assert!(
        found.iter().any(|(s, at, why)| *s == Severity::Lost
            && at == "rules[0].http.paths[0]"
            && why.contains("API server rejects")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(s, at, why)| *s == Severity::Note && at == "tls" && why.contains("by default")),
        "{found:?}"
    );
}

#[test]
fn classes_are_merged_and_their_parameters_reported() {
    let a = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: a, namespace: default}
spec: {ingressClassName: nginx}
";
    let b = "
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: b, namespace: default}
spec: {ingressClassName: internal}
";
    let mut snapshot = snapshot(&[a, b], &[]);
    let class: coxswain_api::IngressClass = serde_yaml_ng::from_str(
        "
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {apiGroup: k8s.example.com, kind: Config, name: tuned}
",
    )
    .unwrap();
    snapshot.insert(Object::IngressClass(Arc::new(class)));
    let migration = convert(&snapshot, &settings());
    let general: Vec<_> = migration
        .report
        .general
        .iter()
        .map(|f| (f.severity, f.at.as_str()))
        .collect();
    assert_eq!(
        general,
        [
            (Severity::Note, "IngressClass"),
            (Severity::Lost, "IngressClass nginx")
        ]
    );
    let mut only = settings();
    only.ingress_class = Some("internal".into());
    let migration = convert(&snapshot, &only);
    assert!(migration.report.general.is_empty());
    assert_eq!(migration.report.ingresses.len(), 1);
}
