//! ListenerSets in standalone mode with real traffic: a tenant's listener
//! on the Gateway's port serves that tenant's routes, and a second tenant
//! claiming the same hostname later is Conflicted and captures nothing.

use crate::support;

use support::*;

fn echo_backend(namespace: &str, echo_port: u16) -> String {
    format!(
        "---
apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: {namespace}
spec:
  ports:
  - port: {echo_port}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo
  namespace: {namespace}
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- port: {echo_port}
endpoints:
- addresses: [127.0.0.1]
"
    )
}

/// A ListenerSet in `namespace` with one HTTP listener for `hostname`,
/// and a route through it tagging requests with the namespace.
fn tenant(namespace: &str, created: &str, hostname: &str, http: u16, echo_port: u16) -> String {
    format!(
        "---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata:
  name: tenant
  namespace: {namespace}
  creationTimestamp: \"{created}\"
spec:
  parentRef:
    name: shared
    namespace: default
  listeners:
  - name: web
    port: {http}
    protocol: HTTP
    hostname: {hostname}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: app
  namespace: {namespace}
spec:
  parentRefs:
  - group: gateway.networking.k8s.io
    kind: ListenerSet
    name: tenant
  rules:
  - filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set:
        - name: x-route
          value: {namespace}
    backendRefs:
    - name: echo
      port: {echo_port}
{}",
        echo_backend(namespace, echo_port)
    )
}

#[test]
fn a_tenant_listener_serves_its_routes_and_a_later_claim_captures_nothing() {
    let (http, echo_port) = (free_port(), free_port());
    let config = TempDir::new("listener-set");
    config.write(
        "gateway.yaml",
        &format!(
            "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: shared
spec:
  gatewayClassName: coxswain
  allowedListeners:
    namespaces:
      from: All
  listeners:
  - name: web
    port: {http}
    protocol: HTTP
    hostname: gw.test
"
        ),
    );
    config.write(
        "team-a.yaml",
        &tenant(
            "team-a",
            "2026-01-01T00:00:00Z",
            "app.test",
            http,
            echo_port,
        ),
    );
    config.write(
        "team-b.yaml",
        &tenant(
            "team-b",
            "2026-01-02T00:00:00Z",
            "app.test",
            http,
            echo_port,
        ),
    );
    let gateway = Gateway::start(config, http, echo_port);
    let url = format!("http://127.0.0.1:{http}/");

    let (code, body) = curl_get(&["-H", "Host: app.test"], &url);
    assert_eq!(code, 200, "{body}\n{}", gateway.stderr());
    assert_eq!(route_tag(&echo_json(&body)).as_deref(), Some("team-a"));
    // The Gateway's own hostname reaches none of the tenants' routes.
    let (code, _) = curl_get(&["-H", "Host: gw.test"], &url);
    assert_eq!(code, 404);

    let status = |name: &str| {
        gateway
            .status_of("ListenerSet", name)
            .unwrap_or_else(|| panic!("no status for {name}"))
    };
    let a = status("tenant");
    assert_eq!(a["conditions"][0]["status"], "True", "{a}");
    let all = gateway.admin_get("/status").unwrap().1;
    let b: Vec<serde_json::Value> = serde_json::from_str::<serde_json::Value>(&all)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "ListenerSet" && s["namespace"] == "team-b")
        .map(|s| s["status"].clone())
        .collect();
    let b = b.first().expect("team-b ListenerSet status");
    assert_eq!(b["conditions"][0]["reason"], "ListenersNotValid", "{b}");
    let listener = &b["listeners"][0]["conditions"];
    let conflicted = listener
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Conflicted")
        .unwrap();
    assert_eq!(conflicted["reason"], "HostnameConflict");
}
