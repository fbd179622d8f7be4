//! Access logs and request ids end to end: the real binary in standalone
//! mode writing its access log to a file, curl and raw sockets as clients,
//! the built-in echo as the backend. Every line is parsed as JSON and its
//! fields checked.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::*;

fn gateway(name: &str, hostname: Option<&str>, listeners: &[(&str, &str, u16)]) -> String {
    let hostname = hostname.map_or(String::new(), |h| format!("    hostname: {h}\n"));
    let listeners: String = listeners
        .iter()
        .map(|(section, protocol, port)| {
            format!("  - name: {section}\n    protocol: {protocol}\n    port: {port}\n{hostname}")
        })
        .collect();
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: {name}
spec:
  gatewayClassName: coxswain
  listeners:
{listeners}---
"
    )
}

/// Routes of the `logs` Gateway: `app.example` with a rate-limited rule
/// (rule 0, one request an hour) and everything else (rule 1); a TCPRoute
/// on its `tcp` listener to the same echo.
fn routes(echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: app
spec:
  parentRefs:
  - {{name: logs, sectionName: http}}
  hostnames: [app.example]
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /limited}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: RateLimit, name: once}}
    backendRefs:
    - {{name: echo, port: {echo_port}}}
  - backendRefs:
    - {{name: echo, port: {echo_port}}}
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RateLimit
metadata:
  name: once
spec:
  requests: 1
  unit: Hour
  burst: 1
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata:
  name: raw
spec:
  parentRefs:
  - {{name: logs, sectionName: tcp}}
  rules:
  - backendRefs:
    - {{name: echo, port: {echo_port}}}
"
    )
}

/// The log's lines so far, each parsed as JSON.
fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Waits until the log has `n` lines, and returns them.
fn wait_lines(path: &Path, n: usize) -> Vec<Value> {
    wait_for(&format!("{n} access-log lines"), || lines(path).len() >= n);
    lines(path)
}

fn one<'a>(all: &'a [Value], what: &str, pick: impl Fn(&Value) -> bool) -> &'a Value {
    let found: Vec<&Value> = all.iter().filter(|v| pick(v)).collect();
    assert_eq!(found.len(), 1, "one record of {what} in {all:#?}");
    found[0]
}

fn is_rfc3339_millis_utc(time: &str) -> bool {
    let b = time.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() == 24
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..23)
        && b[23] == b'Z'
}

fn is_hex_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The named header of a curl `-D -` dump.
fn header<'a>(dump: &'a str, name: &str) -> Option<&'a str> {
    dump.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Status, response headers and body of a GET with `Host: host`.
fn get(port: u16, host: &str, path: &str, extra: &[&str]) -> (u16, String, String) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let host = format!("Host: {host}");
    let mut args = vec!["-D", "/dev/stderr", "-H", host.as_str()];
    args.extend(extra);
    args.extend(["-w", "\n%{http_code}", url.as_str()]);
    let out = curl(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (body, code) = stdout.rsplit_once('\n').unwrap();
    let headers = String::from_utf8(out.stderr).unwrap();
    (code.parse().unwrap_or(0), headers, body.to_string())
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn requests_and_connections_get_one_json_record_each() {
    let config = TempDir::new("accesslog");
    let (http_port, tcp_port, echo_port) = (free_port(), free_port(), free_port());
    let gw_yaml = gateway(
        "logs",
        None,
        &[("http", "HTTP", http_port), ("tcp", "TCP", tcp_port)],
    );
    config.write("gateway.yaml", &format!("{GATEWAY_CLASS}{gw_yaml}"));
    config.write("backend.yaml", &loopback_service("echo", echo_port, &[]));
    config.write("routes.yaml", &routes(echo_port));
    let logs = TempDir::new("accesslog-out");
    let log = logs.path().join("access.log");
    let log_arg = log.to_str().unwrap();
    let args = ["--access-log", log_arg, "--request-id-response"];
    let gw = Gateway::start_with(config, http_port, echo_port, &args);
    // A readiness probe is not a proxied request: the log starts empty.
    assert_eq!(lines(&log).len(), 0);

    // A routed request keeps the client's request id and trace context.
    let trace = format!("traceparent: {TRACEPARENT}");
    let sent_id = ["-H", "x-request-id: client-id-1", "-H", trace.as_str()];
    let (code, headers, body) = get(http_port, "app.example", "/hello?token=secret", &sent_id);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        header(&headers, "x-request-id"),
        Some("client-id-1"),
        "{headers}"
    );
    let echo = echo_json(&body);
    assert_eq!(echo["headers"]["X-Request-Id"][0], "client-id-1", "{body}");

    // No route: a generated id, echoed.
    let (code, headers, _) = get(http_port, "other.example", "/nowhere", &[]);
    assert_eq!(code, 404);
    let generated = header(&headers, "x-request-id")
        .unwrap_or_default()
        .to_string();
    assert!(is_hex_id(&generated), "{headers}");

    // The rate limit lets one through, then answers itself.
    assert_eq!(get(http_port, "app.example", "/limited", &[]).0, 200);
    assert_eq!(get(http_port, "app.example", "/limited", &[]).0, 429);

    // A gRPC call no route takes: answered UNIMPLEMENTED (12), trailers-only.
    let grpc_url = format!("http://127.0.0.1:{http_port}/nope.Svc/Call");
    let grpc = curl(&[
        "--http2-prior-knowledge",
        "-D",
        "-",
        "-o",
        "/dev/null",
        "-X",
        "POST",
        "-H",
        "content-type: application/grpc",
        "-H",
        "Host: grpc.example",
        &grpc_url,
    ]);
    let grpc_headers = String::from_utf8_lossy(&grpc.stdout).to_lowercase();
    assert!(grpc_headers.contains("grpc-status: 12"), "{grpc_headers}");

    // A TCP connection, spliced to the echo server.
    let (code, _, _) = get(tcp_port, "anything", "/over-tcp", &[]);
    assert_eq!(code, 200);

    let all = wait_lines(&log, 6);
    assert_eq!(all.len(), 6, "{all:#?}");
    let upstream = format!("127.0.0.1:{echo_port}");
    for record in &all {
        let time = record["time"].as_str().unwrap_or_default();
        assert!(is_rfc3339_millis_utc(time), "{record}");
        assert_eq!(record["client_ip"], "127.0.0.1", "{record}");
        assert_eq!(record["mirror"], false, "{record}");
    }

    let routed = one(&all, "/hello", |v| v["path"] == "/hello");
    assert_eq!(routed["kind"], "http");
    assert_eq!(routed["listener"], "default/logs/http");
    assert_eq!(routed["route_kind"], "HTTPRoute");
    assert_eq!(routed["route_namespace"], "default");
    assert_eq!(routed["route_name"], "app");
    assert_eq!(routed["route_rule"], 1);
    assert_eq!(routed["method"], "GET");
    assert_eq!(routed["host"], "app.example");
    assert_eq!(routed["protocol"], "HTTP/1.1");
    assert_eq!(routed["upstream"], upstream.as_str());
    assert_eq!(routed["status"], 200);
    assert_eq!(routed["bytes_sent"], body.len() as u64, "{routed}");
    assert_eq!(routed["bytes_received"], 0);
    assert_eq!(routed["request_id"], "client-id-1");
    assert_eq!(routed["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(routed["retries"], 0);
    let total = routed["duration_ms"].as_f64().unwrap();
    let first_byte = routed["upstream_first_byte_ms"].as_f64().unwrap();
    assert!(0.0 < first_byte && first_byte <= total, "{routed}");
    // The first proxied request opened the upstream connection: its
    // connect time is counted (and part of the time to first byte).
    let connect = routed["upstream_connect_ms"].as_f64().unwrap();
    assert!(0.0 < connect && connect <= first_byte, "{routed}");
    assert!(routed.get("answered_by").is_none(), "{routed}");
    assert!(routed.get("grpc_status").is_none(), "{routed}");
    assert!(routed.get("tls_version").is_none(), "{routed}");

    let unrouted = one(&all, "the 404", |v| v["status"] == 404);
    assert_eq!(unrouted["answered_by"], "no_route");
    assert_eq!(unrouted["listener"], "default/logs/http");
    assert_eq!(unrouted["request_id"], generated.as_str());
    assert_eq!(unrouted["host"], "other.example");
    assert!(unrouted.get("route_name").is_none(), "{unrouted}");
    assert!(unrouted.get("upstream").is_none(), "{unrouted}");

    let limited = one(&all, "the 429", |v| v["status"] == 429);
    assert_eq!(limited["answered_by"], "rate_limit");
    assert_eq!(limited["route_name"], "app");
    assert_eq!(limited["route_rule"], 0);
    assert!(limited.get("upstream").is_none(), "{limited}");
    let admitted = one(&all, "the admitted /limited", |v| {
        v["path"] == "/limited" && v["status"] == 200
    });
    assert!(
        is_hex_id(admitted["request_id"].as_str().unwrap()),
        "{admitted}"
    );
    assert_ne!(
        admitted["request_id"], unrouted["request_id"],
        "ids are unique"
    );
    // A later request to the same endpoint rides the pooled connection:
    // no connect, so 0 (as nginx's $upstream_connect_time on keepalive).
    assert_eq!(admitted["upstream"], upstream.as_str(), "{admitted}");
    assert_eq!(
        admitted["upstream_connect_ms"].as_f64(),
        Some(0.0),
        "{admitted}"
    );

    let call = one(&all, "the gRPC call", |v| v["path"] == "/nope.Svc/Call");
    assert_eq!(call["protocol"], "HTTP/2");
    assert_eq!(call["method"], "POST");
    assert_eq!(call["status"], 200);
    assert_eq!(call["grpc_status"], 12);
    assert_eq!(call["answered_by"], "no_route");

    let tcp = one(&all, "the TCP connection", |v| v["kind"] == "tcp");
    assert_eq!(tcp["listener"], "default/logs/tcp");
    assert_eq!(tcp["route_kind"], "TCPRoute");
    assert_eq!(tcp["route_name"], "raw");
    assert_eq!(tcp["route_rule"], 0);
    assert_eq!(tcp["upstream"], upstream.as_str());
    assert!(tcp["bytes_received"].as_u64().unwrap() > 0, "{tcp}");
    assert!(tcp["bytes_sent"].as_u64().unwrap() > 0, "{tcp}");
    assert!(tcp["upstream_connect_ms"].as_f64().is_some(), "{tcp}");
    assert!(tcp.get("status").is_none(), "{tcp}");

    assert_eq!(
        gw.metric("coxswain_proxy_access_log_dropped_total{reason=\"queue_full\"}"),
        Some(0)
    );
}

/// Pipelined HTTP/1.1 GETs of `/` on one connection, one per Host: the
/// gateway answers (and logs) them in order, so once the last one's record
/// is written, any record of the earlier ones would be too.
fn pipelined(port: u16, hosts: &[&str]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut requests = String::new();
    for (i, host) in hosts.iter().enumerate() {
        let close = if i + 1 == hosts.len() {
            "Connection: close\r\n"
        } else {
            ""
        };
        requests.push_str(&format!(
            "GET /{host} HTTP/1.1\r\nHost: {host}\r\n{close}\r\n"
        ));
    }
    stream.write_all(requests.as_bytes()).unwrap();
    let mut answers = String::new();
    stream.read_to_string(&mut answers).unwrap();
    answers
}

fn policy(name: &str, gateway: &str, access_log: &str) -> String {
    format!(
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: ClientTrafficPolicy
metadata:
  name: {name}
spec:
  targetRefs:
  - {{group: gateway.networking.k8s.io, kind: Gateway, name: {gateway}}}
  accessLog:
{access_log}---
"
    )
}

#[test]
fn policies_disable_or_sample_per_gateway_and_sampling_zero_writes_nothing() {
    let config = TempDir::new("accesslog-policy");
    let (http_port, echo_port) = (free_port(), free_port());
    // Three Gateways on one port, told apart by Host.
    let mut yaml = GATEWAY_CLASS.to_string();
    let mut routes = String::new();
    for name in ["off", "unsampled", "loud"] {
        let host = format!("{name}.example");
        yaml.push_str(&gateway(name, Some(&host), &[("http", "HTTP", http_port)]));
        routes.push_str(&format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs: [{{name: {name}}}]
  rules:
  - backendRefs: [{{name: echo, port: {echo_port}}}]
---
"
        ));
    }
    config.write("gateways.yaml", &yaml);
    config.write("routes.yaml", &routes);
    config.write("backend.yaml", &loopback_service("echo", echo_port, &[]));
    let policies = [
        policy("off", "off", "    disabled: true\n"),
        policy(
            "loud",
            "loud",
            "    sampleRatio: 1\n    fields: [status, host, request_id]\n",
        ),
        policy("bad", "unsampled", "    fields: [status, no_such_field]\n"),
    ];
    config.write("policies.yaml", &policies.concat());
    let logs = TempDir::new("accesslog-policy-out");
    let log = logs.path().join("access.log");
    let args = [
        "--access-log",
        log.to_str().unwrap(),
        "--access-log-sample",
        "0",
    ];
    let gw = Gateway::start_with(config, http_port, echo_port, &args);
    let accepted = |name| gw.ancestor_accepted("ClientTrafficPolicy", name);
    assert_eq!(accepted("off").as_deref(), Some("True/Accepted"));
    assert_eq!(accepted("loud").as_deref(), Some("True/Accepted"));
    // An unknown field refuses the policy; its Gateway keeps the flags.
    assert_eq!(accepted("bad").as_deref(), Some("False/Invalid"));
    let status = gw
        .status_of("ClientTrafficPolicy", "bad")
        .unwrap()
        .to_string();
    assert!(status.contains("no_such_field"), "{status}");

    let answers = pipelined(
        http_port,
        &["off.example", "unsampled.example", "loud.example"],
    );
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 3, "{answers}");

    let all = wait_lines(&log, 1);
    assert_eq!(all.len(), 1, "only the loud Gateway logs: {all:#?}");
    let record = all[0].as_object().unwrap();
    let keys: Vec<&str> = record.keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 3, "the policy's fields only: {record:?}");
    assert_eq!(record["host"], "loud.example");
    assert_eq!(record["status"], 200);
    assert!(
        is_hex_id(record["request_id"].as_str().unwrap()),
        "{record:?}"
    );
}

#[test]
fn the_text_format_writes_key_value_lines() {
    let config = TempDir::new("accesslog-text");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    let logs = TempDir::new("accesslog-text-out");
    let log = logs.path().join("access.log");
    let args = [
        "--access-log",
        log.to_str().unwrap(),
        "--access-log-format",
        "text",
        "--access-log-fields",
        "method,path,status,route_name,answered_by",
    ];
    let gw = Gateway::start_with(config, http_port, echo_port, &args);
    let url = gw.url("/text");
    assert_eq!(curl_get(&["-X", "DELETE"], &url).0, 200);
    wait_for("one text line", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() == 1)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    // In the one record order, whatever order the flag named them in.
    assert_eq!(
        text,
        "route_name=echo method=DELETE path=/text status=200\n"
    );
}

#[test]
fn an_access_log_path_that_cannot_be_opened_fails_the_start() {
    let out = std::process::Command::new(BIN)
        .args(["run", "--config", "/nonexistent", "--access-log"])
        .arg("/nonexistent-dir/access.log")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent-dir/access.log"), "{stderr}");
}

/// A request whose first endpoint refuses the connection is answered by the
/// next one, and its record counts the retry and names the endpoint that
/// answered.
#[test]
fn a_retried_request_logs_its_retries_and_the_endpoint_that_answered() {
    let config = TempDir::new("accesslog-retry");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    // Nothing listens on 127.0.0.2: connecting there is refused at once.
    let backend = std::fs::read_to_string(config.path().join("backend.yaml")).unwrap();
    let two = backend.replace("  - 127.0.0.1\n", "  - 127.0.0.1\n  - 127.0.0.2\n");
    assert_ne!(two, backend, "the quickstart's endpoint list moved");
    config.write("backend.yaml", &two);
    let logs = TempDir::new("accesslog-retry-out");
    let log = logs.path().join("access.log");
    let gw = Gateway::start_with(
        config,
        http_port,
        echo_port,
        &["--access-log", log.to_str().unwrap()],
    );
    let answered = format!("127.0.0.1:{echo_port}");
    // Which endpoint goes first is the balancer's choice: ask until one
    // request met the refusing endpoint (each does so with even odds).
    let mut sent = 0;
    let retried = loop {
        sent += 1;
        assert!(sent <= 64, "no request met 127.0.0.2 first in 64");
        assert_eq!(curl_get(&[], &gw.url("/retry")).0, 200);
        let all = wait_lines(&log, sent);
        if let Some(record) = all.iter().find(|r| r["retries"] != 0) {
            break record.clone();
        }
    };
    assert_eq!(retried["retries"], 1, "{retried:#}");
    assert_eq!(retried["status"], 200, "{retried:#}");
    assert_eq!(retried["upstream"], answered.as_str(), "{retried:#}");
}
