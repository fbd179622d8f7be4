//! Standalone mode: editing only an EndpointSlice file reaches the proxy
//! as an endpoint swap, not as a route recompile, and traffic keeps
//! flowing.

use crate::support;

use support::*;

fn slice(echo_port: u16, extra: Option<&str>) -> String {
    let extra = extra.map(|a| format!("\n  - {a}")).unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
  - name: http
    port: {echo_port}
    protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-local
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- name: http
  port: {echo_port}
  protocol: TCP
endpoints:
- addresses:
  - 127.0.0.1{extra}
  conditions:
    ready: true
"
    )
}

#[test]
fn endpoint_edits_recompile_no_route() {
    let gateway = Gateway::quickstart("endpoint-churn");
    let compiled = gateway
        .metric("coxswain_proxy_routes_compiled_total")
        .expect("the counter");
    assert!(compiled > 0);
    let mut applies = gateway
        .metric("coxswain_proxy_config_applies_total")
        .unwrap();
    for i in 0..10 {
        // Alternately a second endpoint that refuses (retried on the first
        // at once) and none.
        let extra = (i % 2 == 0).then_some("127.0.0.2");
        gateway
            .config
            .write_atomic("backend.yaml", &slice(gateway.echo_port, extra));
        wait_for("the edit to be applied", || {
            gateway
                .metric("coxswain_proxy_config_applies_total")
                .is_some_and(|n| n > applies)
        });
        applies = gateway
            .metric("coxswain_proxy_config_applies_total")
            .unwrap();
        assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
    }
    assert_eq!(
        gateway.metric("coxswain_proxy_routes_compiled_total"),
        Some(compiled),
        "an EndpointSlice edit recompiled routes"
    );
}
