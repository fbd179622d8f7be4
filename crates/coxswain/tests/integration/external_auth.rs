//! CoxswainExternalAuth end to end: the real binary in standalone mode,
//! curl as the client, the real tools/ext-authz service (go-control-plane's
//! Envoy Authorization service and an HTTP forward-auth endpoint) behind a
//! Service and EndpointSlice in the config directory, asked by forward-auth
//! and by gRPC Check; then a Gateway policy over every route; then the
//! service's endpoints taken away.

use crate::support;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use support::*;

/// The ext-authz service on two fixed ports, stopped when dropped.
struct AuthService(Child);

impl Drop for AuthService {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn auth_service(http: u16, grpc: u16) -> AuthService {
    let binary = build_tool("ext-authz/build.sh").remove(0);
    let mut child = Command::new(binary)
        .args(["-http", &format!("127.0.0.1:{http}")])
        .args(["-grpc", &format!("127.0.0.1:{grpc}")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Both addresses are printed once both listen.
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("http "));
    assert!(lines.next().unwrap().unwrap().starts_with("grpc "));
    AuthService(child)
}

/// The Service `authz` with both ports, and its endpoint (or none).
fn service(http: u16, grpc: u16, ready: bool) -> String {
    let endpoints = if ready {
        "endpoints:\n- addresses: [127.0.0.1]\n  conditions:\n    ready: true\n"
    } else {
        "endpoints: []\n"
    };
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: authz
spec:
  ports:
  - {{name: http, port: {http}, protocol: TCP}}
  - {{name: grpc, port: {grpc}, protocol: TCP}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: authz-local
  labels:
    kubernetes.io/service-name: authz
addressType: IPv4
ports:
- {{name: http, port: {http}, protocol: TCP}}
- {{name: grpc, port: {grpc}, protocol: TCP}}
{endpoints}"
    )
}

fn resources(http: u16, grpc: u16) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: forward
spec:
  protocol: HTTP
  backendRef: {{name: authz, port: {http}}}
  timeout: 300ms
  allowedResponseHeaders: [x-auth-user, x-auth-path]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: check
spec:
  protocol: GRPC
  backendRef: {{name: authz, port: {grpc}}}
  timeout: 300ms
  failClosed: false
  allowedResponseHeaders: [x-auth-user, x-auth-path]
"
    )
}

fn routes(echo_port: u16) -> String {
    let rule = |path: &str, kind: &str, name: &str| {
        format!(
            "  - matches:
    - path: {{type: PathPrefix, value: {path}}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: {kind}, name: {name}}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
        )
    };
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: authorized
spec:
  parentRefs:
  - name: quickstart
  rules:
{}{}",
        rule("/forward", "CoxswainExternalAuth", "forward"),
        // The user guide's name for the kind.
        rule("/check", "ExternalAuth", "check"),
    )
}

fn curl_as(decision: &str, url: &str) -> (u16, String) {
    let header = format!("x-test-auth: {decision}");
    curl_get(&["-H", &header, "-H", "x-auth-user: forged"], url)
}

#[test]
fn forward_auth_and_grpc_check_decide_with_the_real_service() {
    let (auth_http, auth_grpc) = (free_port(), free_port());
    let _service = auth_service(auth_http, auth_grpc);
    let config = TempDir::new("extauth");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("authz.yaml", &service(auth_http, auth_grpc, true));
    config.write("auth.yaml", &resources(auth_http, auth_grpc));
    config.write("authorized.yaml", &routes(echo_port));
    let gw = Gateway::start(config, http_port, echo_port);
    assert_eq!(
        gw.accepted("CoxswainExternalAuth", "forward").as_deref(),
        Some("True/Accepted")
    );
    assert_eq!(
        gw.accepted("CoxswainExternalAuth", "check").as_deref(),
        Some("True/Accepted")
    );

    for path in ["/forward/x?y=1", "/check/x?y=1"] {
        let (code, body) = curl_as("allow", &gw.url(path));
        assert_eq!(code, 200, "{path}: {body}");
        let echo = echo_json(&body);
        // The echo server lists each header's values under its canonical name.
        let header = |name: &str| echo["headers"][name].clone();
        assert_eq!(
            header("X-Auth-User"),
            serde_json::json!(["alice"]),
            "{path}"
        );
        assert_eq!(header("X-Auth-Path"), serde_json::json!([path]));

        let (code, body) = curl_as("deny", &gw.url(path));
        assert_eq!(code, 403, "{path}");
        assert_eq!(body, "denied by ext-authz\n");
        let out = curl(&["-i", "-H", "x-test-auth: unauth", &gw.url(path)]);
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(text.starts_with("http/1.1 401"), "{path}: {text}");
        assert!(text.contains("www-authenticate: bearer realm=\"test\""));
    }
    // Too slow: /forward fails closed (the default), /check fails open.
    assert_eq!(curl_as("slow", &gw.url("/forward")).0, 503);
    assert_eq!(curl_as("slow", &gw.url("/check")).0, 200);

    // A Gateway policy: every route on the quickstart Gateway is checked,
    // its own route filter as well; a second policy on it is Conflicted.
    gw.config.write(
        "gate.yaml",
        &format!(
            "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: gate
spec:
  protocol: GRPC
  backendRef: {{name: authz, port: {auth_grpc}}}
  targetRefs:
  - {{group: gateway.networking.k8s.io, kind: Gateway, name: quickstart}}
"
        ),
    );
    wait_for("the Gateway policy to guard the quickstart route", || {
        curl_as("deny", &gw.url("/hello")).0 == 403
    });
    assert_eq!(curl_as("allow", &gw.url("/hello")).0, 200);
    assert_eq!(curl_as("unauth", &gw.url("/hello")).0, 401);
    assert_eq!(curl_as("allow", &gw.url("/forward")).0, 200, "both allow");
    assert_eq!(
        gw.ancestor_accepted("CoxswainExternalAuth", "gate")
            .as_deref(),
        Some("True/Accepted")
    );
    gw.config.write(
        "gate2.yaml",
        &std::fs::read_to_string(gw.config.path().join("gate.yaml"))
            .unwrap()
            .replace("name: gate\n", "name: gate2\n"),
    );
    wait_for("the second policy to be Conflicted", || {
        gw.ancestor_accepted("CoxswainExternalAuth", "gate2")
            .as_deref()
            == Some("False/Conflicted")
    });
    assert_eq!(
        gw.ancestor_accepted("CoxswainExternalAuth", "gate")
            .as_deref(),
        Some("True/Accepted")
    );

    // No ready endpoints: both refuse, failClosed or not.
    gw.config
        .write_atomic("authz.yaml", &service(auth_http, auth_grpc, false));
    wait_for("the endpoint-less service to refuse", || {
        curl_as("allow", &gw.url("/check")).0 == 503
    });
    assert_eq!(curl_as("allow", &gw.url("/forward")).0, 503);
}
