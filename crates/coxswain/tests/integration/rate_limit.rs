//! RateLimit end to end: the real binary in standalone mode, curl as the
//! client, the resource edited while it serves. One request per hour with
//! a burst of two, so time passing during the test refills nothing.

use crate::support;

use support::*;

fn limited_route(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: limited
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /limited}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: RateLimit, name: slow}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn limit(burst: u32) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RateLimit
metadata:
  name: slow
spec:
  requests: 1
  unit: Hour
  burst: {burst}
"
    )
}

/// The status code and the named response header of a GET.
fn get_with_header(url: &str, name: &str) -> (u16, String) {
    let out = curl(&[
        "-s",
        "-o",
        "/dev/null",
        "-D",
        "-",
        "-w",
        "%{http_code}",
        url,
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = text
        .lines()
        .last()
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let value = text
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (code, value)
}

#[test]
fn a_client_past_its_burst_gets_429_until_the_limit_changes() {
    let config = TempDir::new("ratelimit");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("limited.yaml", &limited_route(echo_port));
    config.write("slow.yaml", &limit(2));
    let gw = Gateway::start(config, http_port, echo_port);
    let url = gw.url("/limited");

    assert_eq!(
        get_with_header(&url, "ratelimit"),
        (200, "\"slow\";r=1;t=3600".into())
    );
    assert_eq!(
        get_with_header(&url, "ratelimit-policy"),
        (200, "\"slow\";q=1;w=3600".into())
    );
    assert_eq!(get_with_header(&url, "retry-after"), (429, "3600".into()));
    assert_eq!(
        curl_get(&[], &gw.url("/hello")).0,
        200,
        "other routes are not limited"
    );

    // A changed resource starts with fresh buckets.
    gw.config.write_atomic("slow.yaml", &limit(5));
    wait_for("the new limit to admit the client again", || {
        curl_get(&[], &url).0 == 200
    });
}
