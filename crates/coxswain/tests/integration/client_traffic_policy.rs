//! ClientTrafficPolicy end to end in standalone mode: the real binary, curl
//! sending a PROXY protocol v1 header (`--haproxy-protocol`), the policy
//! file edited while it serves.

use crate::support;

use support::*;

fn policy(optional: bool) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: ClientTrafficPolicy
metadata:
  name: behind-lb
spec:
  targetRefs:
  - {{group: gateway.networking.k8s.io, kind: Gateway, name: quickstart}}
  proxyProtocol:
    optional: {optional}
"
    )
}

#[test]
fn proxy_protocol_listener_serves_curl_haproxy_protocol_and_closes_plain_curl() {
    let config = TempDir::new("proxyproto");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("policy.yaml", &policy(false));
    let gw = Gateway::start(config, http_port, echo_port);
    assert_eq!(
        gw.ancestor_accepted("ClientTrafficPolicy", "behind-lb")
            .as_deref(),
        Some("True/Accepted")
    );

    let (code, body) = curl_get(&["--haproxy-protocol"], &gw.url("/hello"));
    assert_eq!(code, 200, "{body}");
    // Without a header the connection is closed: no HTTP status at all.
    let (code, _) = curl_get(&[], &gw.url("/hello"));
    assert_eq!(code, 0, "plain curl must get no answer");
    assert!(
        gw.metric("coxswain_proxy_proxy_protocol_refused_total{reason=\"missing\"}")
            .is_some_and(|n| n >= 1)
    );

    // Optional: both are served.
    gw.config.write_atomic("policy.yaml", &policy(true));
    wait_for(
        "plain curl to be served once the header is optional",
        || curl_get(&[], &gw.url("/hello")).0 == 200,
    );
    assert_eq!(curl_get(&["--haproxy-protocol"], &gw.url("/hello")).0, 200);

    // Without the policy the header is not understood: curl's PROXY line
    // is not an HTTP request.
    std::fs::remove_file(gw.config.path().join("policy.yaml")).unwrap();
    wait_for("the header to be refused once the policy is gone", || {
        curl_get(&["--haproxy-protocol"], &gw.url("/hello")).0 != 200
    });
    assert_eq!(curl_get(&[], &gw.url("/hello")).0, 200);
}
