//! `coxswain explain` on the translator's golden scenarios (winner and
//! near-miss reasons asserted), against a running gateway's admin
//! endpoint, and checked against what the running proxy really does.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{BIN, Gateway, TempDir, curl_get, echo_json, free_port, route_tag, tagged_route};

/// A config directory holding one golden scenario's input.
fn golden(name: &str) -> TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../translate/tests/golden")
        .join(format!("{name}.in.yaml"));
    let dir = TempDir::new(&format!("explain-{name}"));
    dir.write("config.yaml", &std::fs::read_to_string(source).unwrap());
    dir
}

/// Runs `coxswain explain ARGS -o json`: exit code and the JSON.
fn explain(args: &[&str]) -> (i32, Value) {
    let out = Command::new(BIN)
        .arg("explain")
        .args(args)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), json)
}

fn explain_dir(dir: &TempDir, request: &[&str]) -> (i32, Value) {
    let mut args = vec!["--config", dir.path().to_str().unwrap()];
    args.extend(request);
    explain(&args)
}

/// `ns/name` of the winning rule's route.
fn winner(json: &Value) -> String {
    format!(
        "{}/{}",
        json["route"]["namespace"].as_str().unwrap_or("-"),
        json["route"]["name"].as_str().unwrap_or("-")
    )
}

/// The reasons given for the near miss of route `name`, as `field: message`.
fn reasons(json: &Value, name: &str) -> Vec<String> {
    json["near_misses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"] == name)
        .flat_map(|m| m["reasons"].as_array().unwrap().iter())
        .map(|r| {
            format!(
                "{}: {}",
                r["field"].as_str().unwrap(),
                r["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn exact_path_beats_a_longer_prefix_and_the_loser_says_why() {
    let dir = golden("httproute-precedence-exact-over-prefix");
    let (code, json) = explain_dir(&dir, &["http://any.test/foo"]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(winner(&json), "default/exact");
    assert_eq!(json["route"]["match"], "Exact /foo");
    assert_eq!(
        reasons(&json, "prefix"),
        ["path: path /foo does not match PathPrefix /foo/bar"]
    );

    let (_, json) = explain_dir(&dir, &["http://any.test/foo/bar/baz"]);
    assert_eq!(winner(&json), "default/prefix");
    assert_eq!(
        reasons(&json, "exact"),
        ["path: path /foo/bar/baz does not match Exact /foo"]
    );
}

#[test]
fn more_header_matches_rank_first_and_a_missing_header_is_named() {
    let dir = golden("httproute-precedence-header-count");
    let (_, json) = explain_dir(&dir, &["http://h.test/", "-H", "x-a: 1", "-H", "x-b: 2"]);
    assert_eq!(winner(&json), "default/two");
    assert_eq!(
        reasons(&json, "one"),
        ["precedence: matches too, but ranks lower: the winner has more header matches (2 to 1)"]
    );

    let (_, json) = explain_dir(&dir, &["http://h.test/", "-H", "x-a: 1", "-H", "x-b: 3"]);
    assert_eq!(winner(&json), "default/one");
    assert_eq!(
        reasons(&json, "two"),
        ["header: header x-b = \"2\": got \"3\""]
    );

    let (code, json) = explain_dir(&dir, &["http://h.test/"]);
    assert_eq!(code, 1, "no rule matches: exit 1");
    assert_eq!(json["verdict"]["outcome"], "no_route");
    assert_eq!(json["verdict"]["status"], 404);
    assert_eq!(
        reasons(&json, "one"),
        ["header: header x-a = \"1\": absent"]
    );
}

#[test]
fn a_method_match_ranks_first_and_other_methods_are_near_misses() {
    let dir = golden("httproute-precedence-method");
    let (_, json) = explain_dir(&dir, &["http://h.test/api"]);
    assert_eq!(winner(&json), "default/get");
    assert!(
        reasons(&json, "any")[0].starts_with(
            "precedence: matches too, but ranks lower: the winner also matches the method"
        ),
        "{json:#}"
    );
    let (_, json) = explain_dir(&dir, &["POST", "http://h.test/api/x"]);
    assert_eq!(winner(&json), "default/any");
    assert_eq!(reasons(&json, "get"), ["method: method POST is not GET"]);
}

#[test]
fn the_host_picks_the_listener_and_foreign_hosts_miss_on_hostname() {
    let dir = golden("httproute-hostname-per-listener");
    let (_, json) = explain_dir(&dir, &["http://a.example.com/"]);
    assert_eq!(json["listener"]["name"], "exact");
    assert!(
        json["listener"]["reason"]
            .as_str()
            .unwrap()
            .contains("is the Host a.example.com"),
        "{json:#}"
    );
    assert_eq!(winner(&json), "default/web");
    assert_eq!(
        json["route"]["hostnames"],
        serde_json::json!(["a.example.com"])
    );

    let (_, json) = explain_dir(&dir, &["http://b.example.com/"]);
    assert_eq!(json["listener"]["name"], "wild");
    let exact = json["other_listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "exact")
        .unwrap();
    assert_eq!(
        exact["reason"],
        "its hostname a.example.com does not cover the Host b.example.com"
    );

    let (code, json) = explain_dir(&dir, &["http://other.test/"]);
    assert_eq!(code, 1);
    assert_eq!(json["listener"]["name"], "any");
    assert_eq!(json["verdict"]["outcome"], "no_route");
    assert_eq!(
        reasons(&json, "web"),
        ["hostname: Host other.test is not among the rule's hostnames (*.example.com)"]
    );
}

#[test]
fn weights_give_each_backend_its_share_with_its_endpoints() {
    let dir = golden("httproute-weights");
    let (code, json) = explain_dir(&dir, &["http://h.test/"]);
    assert_eq!(code, 0, "{json:#}");
    let backends = json["backends"].as_array().unwrap();
    let shares: Vec<(String, u64, f64)> = backends
        .iter()
        .map(|b| {
            (
                b["cluster"].as_str().unwrap().to_string(),
                b["weight"].as_u64().unwrap(),
                b["share_percent"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shares,
        [
            ("default/echo:8080".to_string(), 3, 75.0),
            ("default/echo2:8080".to_string(), 1, 25.0),
            ("default/echo3:8080".to_string(), 0, 0.0),
        ]
    );
    assert!(
        backends[0]["endpoints"]
            .as_array()
            .is_some_and(|e| !e.is_empty()),
        "{json:#}"
    );
}

#[test]
fn filters_are_listed_in_run_order_and_a_redirect_answers() {
    let dir = golden("httproute-filter-request-headers");
    let (_, json) = explain_dir(&dir, &["http://h.test/x"]);
    let filters = json["filters"].as_array().unwrap();
    assert_eq!(filters.len(), 1, "{json:#}");
    assert_eq!(filters[0]["phase"], "transforms");
    assert_eq!(filters[0]["kind"], "RequestHeaderModifier");
    assert_eq!(
        filters[0]["detail"],
        "set x-env: prod, add x-trace: on, remove x-internal"
    );

    let dir = golden("httproute-redirect-path");
    let (code, json) = explain_dir(&dir, &["http://h.test/v1/a"]);
    assert_eq!(code, 0);
    assert_eq!(json["route"]["rule_index"], 1);
    assert_eq!(json["filters"][0]["kind"], "RequestRedirect");
    assert_eq!(json["verdict"]["status"], 302);
    assert_eq!(
        reasons(&json, "web"),
        ["path: path /v1/a does not match Exact /home"]
    );
}

#[test]
fn text_output_names_listener_route_filters_and_near_misses() {
    let dir = golden("httproute-precedence-exact-over-prefix");
    let out = Command::new(BIN)
        .args(["explain", "--config"])
        .arg(dir.path())
        .arg("http://any.test/foo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "request:  GET http://any.test:80/foo",
        "listener: default/gw/http (no hostname)",
        "route:    HTTPRoute default/exact rule 0, match 0 (Exact /foo)",
        "near misses:",
        "    path: path /foo does not match PathPrefix /foo/bar",
        "verdict:  routed: forwarded to one of the backends below",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn bad_requests_and_missing_sockets_are_reported() {
    let dir = golden("httproute-precedence-exact-over-prefix");
    let (code, json) = explain_dir(&dir, &["http://h.test:8081/foo"]);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"]["outcome"], "no_socket");
    let (code, json) = explain_dir(&dir, &["https://h.test:80/foo"]);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"]["outcome"], "tls_mismatch");
    let out = Command::new(BIN)
        .args(["explain", "--config"])
        .arg(dir.path())
        .arg("not-a-url")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scheme must be http or https"));
}

/// Three tagged routes plus the quickstart ones; each rule sets its own
/// `x-route`, so the echo backend reports which one answered.
fn tagged_gateway() -> Gateway {
    let config = TempDir::new("explain-live");
    let (http_port, echo_port) = (free_port(), free_port());
    support::quickstart_config(&config, http_port, echo_port);
    config.write("a.yaml", &tagged_route("route-a", "/a", "a", echo_port));
    config.write(
        "ab.yaml",
        &tagged_route("route-ab", "/a/b", "ab", echo_port),
    );
    let header_route = format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: route-h
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path:
        type: PathPrefix
        value: /a
      headers:
      - name: x-pick
        value: h
    - path:
        type: Exact
        value: /exact
      method: POST
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set:
        - name: x-route
          value: h
    backendRefs:
    - name: echo
      port: {echo_port}
"
    );
    config.write("h.yaml", &header_route);
    Gateway::start(config, http_port, echo_port)
}

/// The requests the consistency test sends: (method, path, headers).
const REQUESTS: &[(&str, &str, &[&str])] = &[
    ("GET", "/", &[]),
    ("GET", "/a", &[]),
    ("GET", "/a/", &[]),
    ("GET", "/ab", &[]),
    ("GET", "/a/b", &[]),
    ("GET", "/a/b/c", &[]),
    ("GET", "/a/bc", &[]),
    ("GET", "/a", &["x-pick: h"]),
    ("GET", "/a/b", &["x-pick: h"]),
    ("GET", "/a/b", &["x-pick: H"]),
    ("GET", "/exact", &[]),
    ("POST", "/exact", &[]),
    ("POST", "/exact/", &[]),
    ("GET", "/api/x", &["x-api-version: v1"]),
    ("GET", "/api/x", &["x-api-version: v2"]),
    ("GET", "/a/./b", &[]),
    ("GET", "/a/../b", &[]),
    ("GET", "/A", &[]),
];

/// The `x-route` tag each explained route sets (the quickstart's catch-all
/// sets none).
fn expected_tag(route: &str) -> Option<&'static str> {
    match route {
        "default/api" => Some("api-v1"),
        "default/route-a" => Some("a"),
        "default/route-ab" => Some("ab"),
        "default/route-h" => Some("h"),
        _ => None,
    }
}

#[test]
fn explain_names_the_rule_the_running_proxy_really_uses() {
    let gateway = tagged_gateway();
    let admin = gateway.admin.to_string();
    for (method, path, headers) in REQUESTS {
        let url = gateway.url(path);
        let mut args = vec!["--admin", admin.as_str(), method, url.as_str()];
        for h in *headers {
            args.extend(["-H", h]);
        }
        let (code, json) = explain(&args);
        assert_eq!(code, 0, "{method} {path} {headers:?}: {json:#}");
        let route = winner(&json);

        let mut curl_args = vec!["-X", method, "--path-as-is"];
        for h in *headers {
            curl_args.extend(["-H", h]);
        }
        let (status, body) = curl_get(&curl_args, &url);
        assert_eq!(status, 200, "{method} {path}: {body}");
        let echo = echo_json(&body);
        assert_eq!(
            route_tag(&echo).as_deref(),
            expected_tag(&route),
            "{method} {path} {headers:?}: explain says {route}, the proxy's backend saw {echo}"
        );
    }
}

#[test]
fn the_live_admin_config_explains_like_the_directory() {
    let gateway = tagged_gateway();
    let admin = gateway.admin.to_string();
    let dir = gateway.config.path().to_str().unwrap();
    for (method, path, headers) in REQUESTS {
        let url = gateway.url(path);
        let mut request = vec![*method, url.as_str()];
        for h in *headers {
            request.extend(["-H", h]);
        }
        let mut live = vec!["--admin", admin.as_str()];
        live.extend(&request);
        let mut offline = vec!["--config", dir, "--bind-address", "127.0.0.1"];
        offline.extend(&request);
        assert_eq!(explain(&live), explain(&offline), "{method} {path}");
    }
}

/// Two HTTPS listeners sharing port 443, each with its own route.
fn https_config() -> TempDir {
    let certs = TempDir::new("explain-certs");
    support::pki::ca(certs.path(), "ca");
    support::pki::server(certs.path(), "gw", "ca", "DNS:a.test,DNS:*.wild.test");
    let cert = std::fs::read_to_string(certs.path().join("gw.crt")).unwrap();
    let key = std::fs::read_to_string(certs.path().join("gw.key")).unwrap();
    let dir = TempDir::new("explain-https");
    let route = |name: &str, section: &str| {
        format!(
            "---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs:
  - name: gw
    sectionName: {section}
  rules:
  - backendRefs:
    - name: echo
      port: 3000
"
        )
    };
    let listener = |name: &str, hostname: &str| {
        format!(
            "  - name: {name}
    port: 443
    protocol: HTTPS
    hostname: \"{hostname}\"
    tls:
      certificateRefs:
      - name: cert
"
        )
    };
    dir.write(
        "config.yaml",
        &format!(
            "{}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
spec:
  gatewayClassName: coxswain
  listeners:
{}{}---
apiVersion: v1
kind: Secret
metadata:
  name: cert
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}---
{}{}{}",
            support::GATEWAY_CLASS,
            listener("exact", "a.test"),
            listener("wild", "*.wild.test"),
            support::indent(&cert, 4),
            support::indent(&key, 4),
            support::loopback_service("echo", 3000, &[]),
            route("on-exact", "exact"),
            route("on-wild", "wild"),
        ),
    );
    dir
}

#[test]
fn on_tls_sockets_the_sni_picks_the_listener_and_the_host_must_agree() {
    let dir = https_config();
    let (code, json) = explain_dir(&dir, &["https://a.test/"]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["socket"]["tls"], true);
    assert_eq!(json["request"]["sni"], "a.test");
    assert_eq!(json["listener"]["name"], "exact");
    assert_eq!(winner(&json), "default/on-exact");

    let (_, json) = explain_dir(&dir, &["https://x.wild.test/"]);
    assert_eq!(json["listener"]["name"], "wild");
    assert_eq!(winner(&json), "default/on-wild");

    let (code, json) = explain_dir(&dir, &["https://a.test/", "-H", "Host: x.wild.test"]);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"]["outcome"], "misdirected");
    assert_eq!(json["verdict"]["status"], 421);
    assert!(
        json["verdict"]["message"]
            .as_str()
            .unwrap()
            .contains("the Host x.wild.test belongs to default/gw/wild"),
        "{json:#}"
    );

    let (code, json) = explain_dir(&dir, &["https://nobody.test/"]);
    assert_eq!(code, 1);
    assert_eq!(json["verdict"]["outcome"], "no_listener");
    assert_eq!(json["verdict"]["status"], Value::Null);
    let reasons: Vec<&str> = json["other_listeners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            "its hostname a.test does not cover the SNI nobody.test",
            "its hostname *.wild.test does not cover the SNI nobody.test"
        ]
    );
}

#[test]
fn filters_run_by_phase_not_in_the_order_the_rule_lists_them() {
    let dir = TempDir::new("explain-phases");
    support::quickstart_config(&dir, 8080, 3000);
    dir.write(
        "phases.yaml",
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: phases
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {type: PathPrefix, value: /phases}
    filters:
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set:
        - {name: x-out, value: '1'}
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set:
        - {name: x-first, value: '1'}
    - type: CORS
      cors:
        allowOrigins: ['https://app.test']
    - type: ExtensionRef
      extensionRef: {group: gateway.coxswain-labs.dev, kind: IpAccessControl, name: nowhere}
    backendRefs:
    - name: echo
      port: 3000
",
    );
    let (code, json) = explain_dir(&dir, &["http://h.test:8080/phases"]);
    assert_eq!(code, 0, "{json:#}");
    let order: Vec<(String, u64, String)> = json["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["phase"].as_str().unwrap().to_string(),
                f["filter_index"].as_u64().unwrap(),
                f["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("network".to_string(), 3, "unresolved filter".to_string()),
            ("admission".to_string(), 2, "CORS".to_string()),
            (
                "transforms".to_string(),
                1,
                "RequestHeaderModifier".to_string()
            ),
        ]
    );
    assert_eq!(json["filters"][0]["answers"], 500);
    assert_eq!(json["verdict"]["status"], 500);
    assert_eq!(
        json["response_filters"][0]["kind"],
        "ResponseHeaderModifier (rule)"
    );
    assert_eq!(json["response_filters"][0]["detail"], "set x-out: 1");
}
