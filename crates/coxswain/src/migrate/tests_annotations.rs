//! The annotation mapping as pure logic: each family of annotations in,
//! the filters, resources and report out.

use std::sync::Arc;

use coxswain_api::Object;
use serde_json::{Value, json};

use super::convert::{Migration, convert};
use super::report::Severity;
use super::tests::{findings, objects, settings, snapshot};

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
    assert_eq!(kinds, ["BasicAuth", "IpAccessControl", "RequestSizeLimit"]);
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

#[test]
fn a_canary_header_pattern_is_a_regular_expression_match() {
    let main = annotated("site", "team: shop", "s.test", "web");
    let canary = annotated(
        "site-canary",
        "nginx.ingress.kubernetes.io/canary: 'true', \
         nginx.ingress.kubernetes.io/canary-by-header: X-Region, \
         nginx.ingress.kubernetes.io/canary-by-header-pattern: '^eu-'",
        "s.test",
        "beta",
    );
    let migration = convert(&snapshot(&[&main, &canary], &[]), &settings());
    let rules = &route_named(&migration, "site-s.test")["spec"]["rules"];
    assert_eq!(
        rules[0]["matches"][0]["headers"],
        json!([{"type": "RegularExpression", "name": "x-region", "value": "^eu-"}])
    );
    assert_eq!(
        rules[0]["backendRefs"],
        json!([{"name": "beta", "port": 80}])
    );
}

#[test]
fn a_backend_policy_on_a_shared_service_is_reported() {
    let tuned = annotated(
        "api",
        "nginx.ingress.kubernetes.io/load-balance: ewma, \
         ingress.coxswain-labs.dev/compression: 'true', \
         ingress.coxswain-labs.dev/auth-jwt: api-tokens",
        "api.test",
        "api",
    );
    let other = annotated("shop", "team: shop", "shop.test", "api");
    let migration = convert(&snapshot(&[&tuned, &other], &[]), &settings());
    let policy = &objects(&migration, "CoxswainBackendPolicy")[0];
    assert_eq!(
        policy["spec"],
        json!({"loadBalancer": {"algorithm": "ewma"},
               "targetRefs": [{"group": "", "kind": "Service", "name": "api"}]})
    );
    let rule = &route_named(&migration, "api-api.test")["spec"]["rules"][0];
    let kinds: Vec<&str> = rule["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["extensionRef"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["JwtAuth", "Compression"]);
    assert_eq!(
        objects(&migration, "Compression")[0]["spec"],
        json!({"gzip": true, "brotli": true})
    );
    let found = findings(&migration);
    assert!(
        found.iter().any(|(s, _, why)| *s == Severity::Lost
            && why.contains("also a backend of Ingress default/shop")),
        "{found:?}"
    );
}
