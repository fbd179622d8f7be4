//! PathRewriteRegex end to end: the real binary in standalone mode, curl
//! as the client, the resource edited while it serves.

use crate::support;

use support::*;

fn rewritten_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: versioned
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /api}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: PathRewriteRegex, name: versions}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn rewrite(substitution: &str) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: PathRewriteRegex
metadata:
  name: versions
spec:
  pattern: '^/api/v(\\d+)/(.*)$'
  substitution: '{substitution}'
"
    )
}

#[test]
fn the_backend_sees_the_rewritten_path_and_a_bad_substitution_refuses() {
    let config = TempDir::new("pathrewrite");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("versioned.yaml", &rewritten_route(echo_port));
    config.write("versions.yaml", &rewrite("/v$1/$2"));
    let gw = Gateway::start(config, http_port, echo_port);

    let (code, body) = curl_get(&[], &gw.url("/api/v3/things?x=1"));
    assert_eq!(code, 200, "{body}");
    let echo = echo_json(&body);
    assert_eq!(echo["path"], "/v3/things", "{echo}");

    // A group the pattern does not have: not served, never half-applied.
    gw.config.write_atomic("versions.yaml", &rewrite("/v$1/$3"));
    wait_for("the invalid rewrite to refuse", || {
        curl_get(&[], &gw.url("/api/v3/things")).0 == 500
    });
    let status = gw.status_of("PathRewriteRegex", "versions").unwrap();
    assert_eq!(status["conditions"][0]["reason"], "Invalid", "{status}");
    assert_eq!(curl_get(&[], &gw.url("/hello")).0, 200);
}
