//! CoxswainBackendPolicy end to end in standalone mode: the real binary,
//! curl, the built-in echo backend and a pod that refuses connections. The
//! dead pod's circuit breaker opens (and clients never see it fail: the
//! refused connection is retried on the live pod), Cookie persistence pins
//! the client, and the policy's status is Accepted; an invalid value edited
//! into the file is reported, not ignored.

use crate::support;

use support::*;

fn policy(algorithm: &str) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainBackendPolicy
metadata:
  name: echo-policy
spec:
  targetRefs:
  - group: \"\"
    kind: Service
    name: echo
  timeouts:
    connect: 500ms
  loadBalancer:
    algorithm: {algorithm}
  circuitBreaker:
    threshold: 50
    minRequests: 2
    window: 1m
    openDuration: 1m
  sessionPersistence:
    type: Cookie
"
    )
}

/// A second EndpointSlice of the echo Service: a pod nothing listens on.
fn dead_pod(port: u16) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-dead
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- name: http
  port: {port}
endpoints:
- addresses: [\"127.0.0.1\"]
  conditions:
    ready: true
"
    )
}

fn condition(status: &serde_json::Value, type_: &str) -> Option<String> {
    status["ancestors"][0]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

/// The session cookie a response sets (`name=value`), if any.
fn set_cookie(headers: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let value = l
            .strip_prefix("set-cookie: ")
            .or_else(|| l.strip_prefix("Set-Cookie: "))?;
        Some(value.split(';').next()?.trim().to_string())
    })
}

fn headers_of(args: &[&str], url: &str) -> String {
    let mut all = vec!["-D", "-", "-o", "/dev/null"];
    all.extend_from_slice(args);
    all.push(url);
    String::from_utf8(curl(&all).stdout).unwrap()
}

#[test]
fn breaker_persistence_and_status_from_files() {
    let config = TempDir::new("backend-policy");
    let (http_port, echo_port, dead_port) = (free_port(), free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("dead.yaml", &dead_pod(dead_port));
    config.write("policy.yaml", &policy("round_robin"));
    let gateway = Gateway::start(config, http_port, echo_port);

    wait_for("the policy to be Accepted", || {
        gateway
            .status_of("CoxswainBackendPolicy", "echo-policy")
            .is_some_and(|s| condition(&s, "Accepted").as_deref() == Some("True"))
    });
    // Every request answers 200: a refused connection to the dead pod is
    // tried again on the live one, and two of them open its breaker.
    for _ in 0..6 {
        assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
    }
    let dead = format!(
        "coxswain_proxy_circuit_breaker_state{{upstream=\"default/echo:{echo_port}\",endpoint=\"127.0.0.1:{dead_port}\"}}"
    );
    assert_eq!(
        gateway.metric(&dead),
        Some(1),
        "the dead pod's breaker is open"
    );
    let live = format!(
        "coxswain_proxy_circuit_breaker_state{{upstream=\"default/echo:{echo_port}\",endpoint=\"127.0.0.1:{echo_port}\"}}"
    );
    assert_eq!(gateway.metric(&live), Some(0));

    // A new client is pinned by cookie; with it, no new cookie is set.
    let first = headers_of(&[], &gateway.url("/hello"));
    let cookie = set_cookie(&first).expect("a session cookie");
    assert!(cookie.starts_with("__coxswain_session="), "{cookie}");
    assert!(
        first.to_ascii_lowercase().contains("; path=/; httponly"),
        "{first}"
    );
    let again = headers_of(&["-b", &cookie], &gateway.url("/hello"));
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    assert_eq!(set_cookie(&again), None, "{again}");

    // An algorithm nobody knows: the policy still applies, and says so.
    gateway
        .config
        .write_atomic("policy.yaml", &policy("fastest"));
    wait_for("PartiallyInvalid for the unknown algorithm", || {
        gateway
            .status_of("CoxswainBackendPolicy", "echo-policy")
            .is_some_and(|s| {
                condition(&s, "PartiallyInvalid").as_deref() == Some("True")
                    && s.to_string().contains("\\\"fastest\\\"")
            })
    });
    assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
}
