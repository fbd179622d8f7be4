//! OpenTelemetry tracing end to end: the real binary exporting to a real
//! OTLP receiver (Jaeger, tools/jaeger), over gRPC and over HTTP; the
//! built-in echo backend shows the `traceparent` the gateway forwarded,
//! Jaeger's query API shows the spans that arrived.

use crate::support;
use crate::support::jaeger;

use jaeger::{Jaeger, Span, Trace, same_trace_id};
use support::*;

/// A gateway serving the quickstart config, exporting to `jaeger`.
fn traced_gateway(jaeger: &Jaeger, protocol: &str, extra: &[&str]) -> Gateway {
    let config = TempDir::new("tracing");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    traced(jaeger, protocol, config, (http_port, echo_port), extra)
}

fn traced(
    jaeger: &Jaeger,
    protocol: &str,
    config: TempDir,
    (http_port, echo_port): (u16, u16),
    extra: &[&str],
) -> Gateway {
    let endpoint = jaeger.endpoint(protocol);
    let mut args = vec![
        "--otlp-endpoint",
        &endpoint,
        "--otlp-protocol",
        protocol,
        "--trace-batch-interval",
        "20ms",
    ];
    args.extend_from_slice(extra);
    Gateway::start_with(config, http_port, echo_port, &args)
}

/// The `traceparent` the echo backend received: (trace id, parent span
/// id, flags).
fn forwarded_traceparent(echo: &serde_json::Value) -> (String, String, String) {
    let value = echo["headers"]["Traceparent"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent forwarded: {echo}"));
    let parts: Vec<&str> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[0], "00", "{value}");
    (parts[1].into(), parts[2].into(), parts[3].into())
}

fn only(spans: Vec<Span>, what: &str) -> Span {
    assert_eq!(spans.len(), 1, "one {what} span expected");
    spans.into_iter().next().unwrap()
}

/// The checks every routed request's server span passes: the quickstart
/// route and listener, the request and its answer.
fn assert_routed_server_span(span: &Span, path: &str, status: i64) {
    assert_eq!(
        span.text("coxswain.route.kind").as_deref(),
        Some("HTTPRoute")
    );
    assert_eq!(span.text("coxswain.route.name").as_deref(), Some("echo"));
    assert_eq!(
        span.text("coxswain.route.namespace").as_deref(),
        Some("default")
    );
    assert_eq!(span.text("coxswain.route.rule").as_deref(), Some("0"));
    assert_eq!(
        span.text("coxswain.gateway").as_deref(),
        Some("default/quickstart")
    );
    assert_eq!(span.text("coxswain.listener").as_deref(), Some("http"));
    assert_eq!(span.text("http.request.method").as_deref(), Some("GET"));
    assert_eq!(span.text("http.route").as_deref(), Some("/"));
    assert_eq!(span.text("url.path").as_deref(), Some(path));
    assert_eq!(span.int("http.response.status_code"), Some(status));
    assert_eq!(span.name(), "GET /");
}

fn new_trace_is_created_and_exported(protocol: &str) {
    let jaeger = Jaeger::start();
    let service = format!("coxswain-{protocol}");
    let gw = traced_gateway(&jaeger, protocol, &["--trace-service-name", &service]);
    let (code, body) = curl_get(&[], &gw.url("/hello/world?q=1"));
    assert_eq!(code, 200, "{body}");
    let (trace_id, parent, flags) = forwarded_traceparent(&echo_json(&body));
    assert_eq!(flags, "01", "sampled at the default ratio 1");

    let trace = jaeger.wait_trace(&trace_id, 2);
    assert!(same_trace_id(
        trace.0["traceID"].as_str().unwrap(),
        &trace_id
    ));
    let server = only(trace.of_kind("server"), "server");
    let client = only(trace.of_kind("client"), "client");
    assert_routed_server_span(&server, "/hello/world", 200);
    assert_eq!(server.parent(), None, "a new trace's root");
    assert_eq!(trace.service_of(&server), service);
    // The upstream attempt is the server span's child and the backend's
    // parent.
    assert_eq!(client.parent(), Some(server.id()));
    assert_eq!(client.id(), parent);
    assert_eq!(client.int("server.port"), Some(i64::from(gw.echo_port)));
    assert_eq!(client.text("server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(client.int("http.response.status_code"), Some(200));
    assert_eq!(
        client.tag("http.request.resend_count"),
        None,
        "a first attempt"
    );
    assert_eq!(
        client.text("url.full").as_deref(),
        Some(format!("http://127.0.0.1:{}/hello/world", gw.echo_port).as_str()),
        "the query is left out"
    );
    wait_for("the exported spans to be counted", || {
        gw.metric("coxswain_proxy_trace_spans_exported_total") == Some(2)
    });
}

#[test]
fn a_request_without_traceparent_starts_a_trace_exported_over_grpc() {
    new_trace_is_created_and_exported("grpc");
}

#[test]
fn a_request_without_traceparent_starts_a_trace_exported_over_http() {
    new_trace_is_created_and_exported("http");
}

#[test]
fn a_sampled_traceparent_is_continued_and_its_tracestate_forwarded() {
    let jaeger = Jaeger::start();
    let gw = traced_gateway(&jaeger, "http", &[]);
    let trace_id = "5af7183fb1d4cf5f4bf92f3577b34da6";
    let incoming = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let (code, body) = curl_get(
        &[
            "-H",
            &format!("traceparent: {incoming}"),
            "-H",
            "tracestate: congo=t61rcWkgMzE",
        ],
        &gw.url("/api"),
    );
    assert_eq!(code, 200, "{body}");
    let echo = echo_json(&body);
    let (forwarded_trace, parent, flags) = forwarded_traceparent(&echo);
    assert_eq!(forwarded_trace, trace_id, "the client's trace continues");
    assert_ne!(
        parent, "00f067aa0ba902b7",
        "the gateway's own span is the parent"
    );
    assert_eq!(flags, "01");
    assert_eq!(echo["headers"]["Tracestate"][0], "congo=t61rcWkgMzE");

    let trace = jaeger.wait_trace(trace_id, 2);
    let server = only(trace.of_kind("server"), "server");
    assert_eq!(server.parent().as_deref(), Some("00f067aa0ba902b7"));
    assert_routed_server_span(&server, "/api", 200);
    let client = only(trace.of_kind("client"), "client");
    assert_eq!(client.parent(), Some(server.id()));
    assert_eq!(client.id(), parent);
}

#[test]
fn an_invalid_traceparent_starts_a_new_trace_without_its_tracestate() {
    let jaeger = Jaeger::start();
    let gw = traced_gateway(&jaeger, "grpc", &[]);
    // Uppercase hex is not a valid traceparent.
    let invalid = "00-5AF7183FB1D4CF5F4BF92F3577B34DA6-00f067aa0ba902b7-01";
    let (code, body) = curl_get(
        &[
            "-H",
            &format!("traceparent: {invalid}"),
            "-H",
            "tracestate: congo=1",
        ],
        &gw.url("/"),
    );
    assert_eq!(code, 200, "{body}");
    let echo = echo_json(&body);
    let (trace_id, _, _) = forwarded_traceparent(&echo);
    assert_ne!(trace_id, "5af7183fb1d4cf5f4bf92f3577b34da6");
    assert!(echo["headers"]["Tracestate"].is_null(), "{echo}");
    let trace = jaeger.wait_trace(&trace_id, 2);
    assert_eq!(only(trace.of_kind("server"), "server").parent(), None);
}

#[test]
fn sampling_zero_exports_only_traces_a_client_sampled() {
    let jaeger = Jaeger::start();
    let gw = traced_gateway(&jaeger, "grpc", &["--trace-sample", "0"]);
    // No traceparent: a new trace, not sampled at ratio 0, still
    // propagated (unsampled) so the backend can join it.
    let (_, body) = curl_get(&[], &gw.url("/new"));
    let (new_trace, _, flags) = forwarded_traceparent(&echo_json(&body));
    assert_eq!(flags, "00");
    // A parent that was not sampled stays unsampled.
    let unsampled = "1af7183fb1d4cf5f4bf92f3577b34da6";
    let header = format!("traceparent: 00-{unsampled}-00f067aa0ba902b7-00");
    let (_, body) = curl_get(&["-H", &header], &gw.url("/unsampled"));
    let (trace, _, flags) = forwarded_traceparent(&echo_json(&body));
    assert_eq!((trace.as_str(), flags.as_str()), (unsampled, "00"));
    // A sampled parent is honoured whatever the ratio.
    let sampled = "2af7183fb1d4cf5f4bf92f3577b34da6";
    let header = format!("traceparent: 00-{sampled}-00f067aa0ba902b7-01");
    let (_, body) = curl_get(&["-H", &header], &gw.url("/sampled"));
    assert_eq!(forwarded_traceparent(&echo_json(&body)).2, "01");

    // Spans are exported in the order they ended: once the sampled
    // trace is in, the earlier ones would be too, had they been recorded.
    jaeger.wait_trace(sampled, 2);
    assert!(
        jaeger.trace(&new_trace).is_none(),
        "ratio 0 recorded a new trace"
    );
    assert!(
        jaeger.trace(unsampled).is_none(),
        "an unsampled parent was recorded"
    );
    wait_for("the exported spans to be counted", || {
        gw.metric("coxswain_proxy_trace_spans_exported_total") == Some(2)
    });
}

/// A route whose only endpoint refuses connections, retried once.
fn refusing_route(dead_port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: dead
spec:
  ports:
  - {{name: http, port: {dead_port}, protocol: TCP}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: dead-local
  labels:
    kubernetes.io/service-name: dead
addressType: IPv4
ports:
- {{name: http, port: {dead_port}, protocol: TCP}}
endpoints:
- addresses: [127.0.0.1]
  conditions:
    ready: true
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: flaky
spec:
  parentRefs:
  - name: quickstart
  rules:
  - name: retried
    matches:
    - path: {{type: PathPrefix, value: /flaky}}
    retry:
      codes: [503]
      attempts: 1
    backendRefs:
    - name: dead
      port: {dead_port}
"
    )
}

#[test]
fn each_upstream_attempt_of_a_retried_request_is_a_span() {
    let jaeger = Jaeger::start();
    let config = TempDir::new("tracing-retry");
    let (http_port, echo_port, dead_port) = (free_port(), free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("flaky.yaml", &refusing_route(dead_port));
    let gw = traced(&jaeger, "grpc", config, (http_port, echo_port), &[]);
    let trace_id = "3af7183fb1d4cf5f4bf92f3577b34da6";
    let header = format!("traceparent: 00-{trace_id}-00f067aa0ba902b7-01");
    let (code, _) = curl_get(&["-H", &header], &gw.url("/flaky"));
    assert_eq!(code, 502);

    let trace: Trace = jaeger.wait_trace(trace_id, 3);
    let server = only(trace.of_kind("server"), "server");
    assert_eq!(server.text("coxswain.route.name").as_deref(), Some("flaky"));
    assert_eq!(
        server.text("coxswain.route.rule").as_deref(),
        Some("retried")
    );
    assert_eq!(server.int("http.response.status_code"), Some(502));
    assert_eq!(
        server.tag("error"),
        Some(serde_json::json!(true)),
        "a 5xx answer"
    );
    let attempts = trace.of_kind("client");
    assert_eq!(attempts.len(), 2, "the first attempt and one retry");
    for (n, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt.parent(), Some(server.id()));
        assert_eq!(attempt.text("error.type").as_deref(), Some("connect_error"));
        assert_eq!(attempt.int("server.port"), Some(i64::from(dead_port)));
        let resend = attempt.int("http.request.resend_count");
        assert_eq!(resend, (n > 0).then_some(n as i64), "attempt {n}");
    }
}

/// The tools/ext-authz service (Envoy's Authorization/Check over gRPC),
/// stopped when dropped.
struct AuthService(std::process::Child);

impl Drop for AuthService {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn auth_service(grpc: u16) -> AuthService {
    use std::io::BufRead;
    let binary = build_tool("ext-authz/build.sh").remove(0);
    let mut child = std::process::Command::new(binary)
        .args(["-http", &format!("127.0.0.1:{}", free_port())])
        .args(["-grpc", &format!("127.0.0.1:{grpc}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both addresses are printed once both listen.
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("http "));
    assert!(lines.next().unwrap().unwrap().starts_with("grpc "));
    AuthService(child)
}

/// A rule under /checked guarded by a gRPC CoxswainExternalAuth.
fn checked_route(grpc: u16, echo_port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata:
  name: authz
spec:
  ports:
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
- {{name: grpc, port: {grpc}, protocol: TCP}}
endpoints:
- addresses: [127.0.0.1]
  conditions:
    ready: true
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: check
spec:
  protocol: GRPC
  backendRef: {{name: authz, port: {grpc}}}
  timeout: 2s
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: checked
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /checked}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: CoxswainExternalAuth, name: check}}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

#[test]
fn an_external_authorization_check_is_a_span_of_the_request() {
    let jaeger = Jaeger::start();
    let auth_grpc = free_port();
    let _auth = auth_service(auth_grpc);
    let config = TempDir::new("tracing-authz");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    config.write("checked.yaml", &checked_route(auth_grpc, echo_port));
    let gw = traced(&jaeger, "http", config, (http_port, echo_port), &[]);
    let check_name = "envoy.service.auth.v3.Authorization/Check";

    let allowed = "4af7183fb1d4cf5f4bf92f3577b34da6";
    let header = format!("traceparent: 00-{allowed}-00f067aa0ba902b7-01");
    let (code, body) = curl_get(
        &["-H", &header, "-H", "x-test-auth: allow"],
        &gw.url("/checked"),
    );
    assert_eq!(code, 200, "{body}");
    let trace = jaeger.wait_trace(allowed, 3);
    let server = only(trace.of_kind("server"), "server");
    let clients = trace.of_kind("client");
    assert_eq!(clients.len(), 2, "the check, then the upstream attempt");
    let check = clients.iter().find(|s| s.name() == check_name).unwrap();
    let attempt = clients.iter().find(|s| s.name() == "GET").unwrap();
    for child in [check, attempt] {
        assert_eq!(child.parent(), Some(server.id()));
    }
    assert_eq!(
        check.text("coxswain.ext_authz.decision").as_deref(),
        Some("allow")
    );
    assert_eq!(check.int("rpc.grpc.status_code"), Some(0));
    assert_eq!(check.int("server.port"), Some(i64::from(auth_grpc)));
    assert!(check.0["startTime"].as_u64() <= attempt.0["startTime"].as_u64());

    let denied = "6af7183fb1d4cf5f4bf92f3577b34da6";
    let header = format!("traceparent: 00-{denied}-00f067aa0ba902b7-01");
    let (code, _) = curl_get(
        &["-H", &header, "-H", "x-test-auth: deny"],
        &gw.url("/checked"),
    );
    assert_eq!(code, 403);
    let trace = jaeger.wait_trace(denied, 2);
    let server = only(trace.of_kind("server"), "server");
    assert_eq!(server.int("http.response.status_code"), Some(403));
    assert_eq!(
        server.tag("error"),
        None,
        "a 4xx is the client's, not an error"
    );
    let check = only(trace.of_kind("client"), "client");
    assert_eq!(check.name(), check_name);
    assert_eq!(
        check.text("coxswain.ext_authz.decision").as_deref(),
        Some("deny")
    );
}

#[test]
fn a_grpc_call_no_route_took_is_a_server_span_with_its_grpc_status() {
    let jaeger = Jaeger::start();
    let config = TempDir::new("tracing-grpc");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    // Only /only is routed: the call below is answered by the gateway.
    config.write(
        "routes.yaml",
        &tagged_route("only", "/only", "only", echo_port),
    );
    let gw = traced(&jaeger, "grpc", config, (http_port, echo_port), &[]);
    let trace_id = "7af7183fb1d4cf5f4bf92f3577b34da6";
    let out = curl(&[
        "--http2-prior-knowledge",
        "-X",
        "POST",
        "-H",
        "content-type: application/grpc",
        "-H",
        &format!("traceparent: 00-{trace_id}-00f067aa0ba902b7-01"),
        "--data-binary",
        "",
        "-D",
        "-",
        &gw.url("/grpc.testing.TestService/EmptyCall"),
    ]);
    let head = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(head.contains("grpc-status: 12"), "{head}");

    let trace = jaeger.wait_trace(trace_id, 1);
    let server = only(trace.of_kind("server"), "server");
    assert_eq!(server.name(), "grpc.testing.TestService/EmptyCall");
    assert_eq!(server.text("rpc.system").as_deref(), Some("grpc"));
    assert_eq!(
        server.text("rpc.service").as_deref(),
        Some("grpc.testing.TestService")
    );
    assert_eq!(server.text("rpc.method").as_deref(), Some("EmptyCall"));
    assert_eq!(
        server.int("rpc.grpc.status_code"),
        Some(12),
        "UNIMPLEMENTED"
    );
    assert_eq!(server.tag("error"), Some(serde_json::json!(true)));
    assert_eq!(server.tag("coxswain.route.name"), None, "no route took it");
    assert_eq!(
        server.text("network.protocol.version").as_deref(),
        Some("2")
    );
    assert!(trace.of_kind("client").is_empty());
}
