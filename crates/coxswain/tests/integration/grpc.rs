//! GRPCRoute end to end in standalone mode, with the standard gRPC interop
//! test server and client (grpc-go, pinned and built by
//! tools/grpc-interop/build.sh) over real sockets: h2c and TLS with ALPN h2
//! to the gateway, h2c from the gateway to the server. Also the gateway's
//! own answers to gRPC requests (no route, no reachable backend), which
//! must be gRPC statuses rather than bare HTTP errors.

use crate::support;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;

use support::*;

/// A child process killed when the test ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The interop server and client binaries, built (or found cached) once
/// per test binary.
struct Interop {
    server: PathBuf,
    client: PathBuf,
    grpcurl: PathBuf,
}

fn interop() -> &'static Interop {
    static BINARIES: OnceLock<Interop> = OnceLock::new();
    BINARIES.get_or_init(|| match build_tool("grpc-interop/build.sh").as_slice() {
        [server, client, grpcurl] => Interop {
            server: server.clone(),
            client: client.clone(),
            grpcurl: grpcurl.clone(),
        },
        paths => panic!("tools/grpc-interop/build.sh printed {paths:?}"),
    })
}

/// The port fields of a Service spoken to over h2c.
const H2C: &[&str] = &["appProtocol: kubernetes.io/h2c"];

/// The name the gateway's certificate is for (the client checks it).
const SERVER_NAME: &str = "grpc.test";

struct Ports {
    /// HTTP listener: h2c with prior knowledge.
    h2c: u16,
    /// HTTPS listener: TLS, ALPN h2.
    https: u16,
    /// HTTP listener whose route's only endpoint is a closed port.
    dead: u16,
    /// HTTP listener whose route's only endpoint accepts and never answers.
    silent: u16,
}

/// A GRPCRoute on the given listeners for the interop TestService only.
fn test_service_route(name: &str, sections: &[&str], backend: &str, port: u16) -> String {
    grpc_route(name, sections, &["grpc.testing.TestService"], backend, port)
}

/// A GRPCRoute on one listener for the server reflection services (v1
/// and v1alpha, which grpcurl falls back to).
fn reflection_route(name: &str, section: &str, backend: &str, port: u16) -> String {
    let services = [
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ];
    grpc_route(name, &[section], &services, backend, port)
}

/// A GRPCRoute on `sections` of Gateway `grpc`, one rule matching any of
/// `services`, to `backend`:`port`.
fn grpc_route(
    name: &str,
    sections: &[&str],
    services: &[&str],
    backend: &str,
    port: u16,
) -> String {
    let parents: String = sections
        .iter()
        .map(|s| format!("  - name: grpc\n    sectionName: {s}\n"))
        .collect();
    let matches: String = services
        .iter()
        .map(|s| format!("    - method:\n        service: {s}\n"))
        .collect();
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: {name}
spec:
  parentRefs:
{parents}  rules:
  - matches:
{matches}    backendRefs:
    - name: {backend}
      port: {port}
"
    )
}

fn config_yaml(
    p: &Ports,
    server_port: u16,
    closed_port: u16,
    silent_port: u16,
    cert: &str,
    key: &str,
) -> String {
    let documents = [
        format!(
            "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: grpc
spec:
  gatewayClassName: coxswain
  listeners:
  - name: h2c
    protocol: HTTP
    port: {}
  - name: https
    protocol: HTTPS
    port: {}
    tls:
      certificateRefs:
      - name: gateway-cert
  - name: dead
    protocol: HTTP
    port: {}
  - name: silent
    protocol: HTTP
    port: {}
",
            p.h2c, p.https, p.dead, p.silent
        ),
        format!(
            "apiVersion: v1
kind: Secret
metadata:
  name: gateway-cert
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}",
            indent(cert, 4),
            indent(key, 4)
        ),
        loopback_service("interop", server_port, H2C),
        loopback_service("closed", closed_port, H2C),
        test_service_route("interop", &["h2c", "https"], "interop", server_port),
        reflection_route("reflection", "h2c", "interop", server_port),
        test_service_route("dead", &["dead"], "closed", closed_port),
        loopback_service("silent", silent_port, H2C),
        test_service_route("silent", &["silent"], "silent", silent_port),
    ];
    documents.join("---\n")
}

struct Setup {
    gateway: Gateway,
    ports: Ports,
    certs: TempDir,
    _server: Running,
    /// Accepts connections (the kernel's backlog) and never answers.
    _silent: TcpListener,
}

impl Setup {
    fn ca_file(&self) -> PathBuf {
        self.certs.path().join("ca.crt")
    }

    /// The GRPCRoute's status, for failure messages.
    fn route_status(&self) -> String {
        format!("{:?}", self.gateway.status_of("GRPCRoute", "interop"))
    }
}

/// The interop server (h2c) behind a Gateway with an h2c listener, an
/// HTTPS listener (a CA-signed certificate for [`SERVER_NAME`]), and a
/// third listener whose route leads to a closed port.
fn setup(tag: &str) -> Setup {
    let bins = interop();
    let server_port = free_port();
    let server = Running(
        Command::new(&bins.server)
            .args(["-port", &server_port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let certs = TempDir::new(&format!("{tag}-certs"));
    support::pki::ca(certs.path(), "ca");
    support::pki::server(certs.path(), "gateway", "ca", &format!("DNS:{SERVER_NAME}"));
    let cert = std::fs::read_to_string(certs.path().join("gateway.crt")).unwrap();
    let key = std::fs::read_to_string(certs.path().join("gateway.key")).unwrap();
    let ports = Ports {
        h2c: free_port(),
        https: free_port(),
        dead: free_port(),
        silent: free_port(),
    };
    let silent = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    // Reserved and never bound: connecting to it is refused.
    let closed_port = free_port();
    let config = TempDir::new(tag);
    config.write(
        "grpc.yaml",
        &config_yaml(&ports, server_port, closed_port, silent_port, &cert, &key),
    );
    wait_for("the interop server", || {
        TcpStream::connect(("127.0.0.1", server_port)).is_ok()
    });
    let gateway = Gateway::start(config, ports.h2c, free_port());
    for port in [ports.h2c, ports.https, ports.dead, ports.silent] {
        wait_for("the gateway's listeners", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }
    Setup {
        gateway,
        ports,
        certs,
        _server: server,
        _silent: silent,
    }
}

/// One run of the interop client.
struct ClientRun {
    status: ExitStatus,
    output: String,
}

/// Runs one interop test case against 127.0.0.1:port, in plain text (h2c
/// with prior knowledge) or, given the CA, over TLS checking the
/// certificate for [`SERVER_NAME`]. Bounded by the test deadline.
fn run_client(case: &str, port: u16, tls_ca: Option<&Path>) -> ClientRun {
    let mut cmd = Command::new(&interop().client);
    cmd.args(["-server_host", "127.0.0.1"])
        .args(["-server_port", &port.to_string()])
        .args(["-test_case", case]);
    if let Some(ca) = tls_ca {
        cmd.args([
            "-use_tls",
            "-use_test_ca",
            "-server_host_override",
            SERVER_NAME,
        ])
        .arg("-ca_file")
        .arg(ca);
    }
    let mut child = Running(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let readers = [
        drain(child.0.stdout.take().unwrap()),
        drain(child.0.stderr.take().unwrap()),
    ];
    let mut status = None;
    wait_for(&format!("interop client {case} to exit"), || {
        status = child.0.try_wait().unwrap();
        status.is_some()
    });
    let output = readers.map(|r| r.join().unwrap()).concat();
    ClientRun {
        status: status.unwrap(),
        output,
    }
}

/// Reads a child's pipe to the end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// Runs each case; fails naming every case that did not exit 0, with
/// `context` (statuses, the gateway's log).
fn run_cases(cases: &[&str], port: u16, tls_ca: Option<&Path>, context: impl Fn() -> String) {
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let run = run_client(case, port, tls_ca);
            (!run.status.success()).then(|| format!("{case}: {}: {}", run.status, run.output))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "interop cases failed:\n{}\n{}",
        failed.join("\n"),
        context()
    );
}

impl Setup {
    /// The route's status and the gateway's log, for failure messages.
    fn context(&self) -> String {
        format!(
            "GRPCRoute status: {}\ngateway log:\n{}",
            self.route_status(),
            self.gateway.stderr()
        )
    }
}

/// curl's view of a POST of an empty gRPC request to `path`: (verbose
/// stderr with the response headers, body).
fn curl_grpc(port: u16, path: &str, extra: &[&str]) -> (String, String) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut args = vec![
        "--http2-prior-knowledge",
        "-v",
        "--max-time",
        "10",
        "-X",
        "POST",
        "-H",
        "content-type: application/grpc",
    ];
    args.extend_from_slice(extra);
    args.push(&url);
    let out = curl(&args);
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Asserts a trailers-only gRPC answer: HTTP 200, `grpc-status: code` in
/// the (only) header block, and no body.
fn assert_trailers_only(verbose: &str, body: &str, code: u32) {
    let headers: Vec<String> = verbose
        .lines()
        .filter_map(|l| l.strip_prefix("< "))
        .map(|l| l.trim().to_ascii_lowercase())
        .collect();
    assert!(
        headers.iter().any(|h| h == "http/2 200"),
        "not HTTP/2 200: {verbose}"
    );
    assert!(
        headers.iter().any(|h| *h == format!("grpc-status: {code}")),
        "no grpc-status: {code}: {verbose}"
    );
    assert!(body.is_empty(), "a body: {body:?}");
}

/// Waits (with the deadline) until the gateway has counted `n` calls on
/// `route` ending with `grpc_status`.
fn wait_grpc_count(s: &Setup, route: &str, grpc_status: &str, n: u64) {
    let series = format!(
        "coxswain_proxy_grpc_requests_total{{route=\"{route}\",grpc_status=\"{grpc_status}\"}}"
    );
    let mut last = None;
    wait_for(&format!("{series} to be {n}"), || {
        last = s.gateway.metric(&series);
        last == Some(n)
    });
}

/// Every interop case that needs only the TestService, through the h2c
/// listener: unary, all streaming shapes, deadlines, cancellation, status
/// codes and messages (Unicode, whitespace), custom metadata in headers
/// and trailers including binary (`-bin`) values.
#[test]
fn interop_cases_over_h2c() {
    let s = setup("h2c");
    let cases = [
        "empty_unary",
        "large_unary",
        "client_streaming",
        "server_streaming",
        "ping_pong",
        "empty_stream",
        "timeout_on_sleeping_server",
        "custom_metadata",
        "status_code_and_message",
        "special_status_message",
        "cancel_after_begin",
        "cancel_after_first_response",
    ];
    run_cases(&cases, s.ports.h2c, None, || s.context());
    // Each call the gateway saw is counted by the status the server sent
    // in its trailers: eight calls end OK (custom_metadata makes two),
    // three UNKNOWN (status_code_and_message two, special_status_message
    // one). cancel_after_first_response ends without a status (`none`);
    // whether the two cases that cancel at once reach the gateway at all
    // depends on timing, so `none` is at least one.
    let route = "default/interop/0";
    wait_grpc_count(&s, route, "0", 8);
    wait_grpc_count(&s, route, "2", 3);
    let none =
        format!("coxswain_proxy_grpc_requests_total{{route=\"{route}\",grpc_status=\"none\"}}");
    wait_for("a cancelled call counted as none", || {
        s.gateway.metric(&none).is_some_and(|n| n >= 1)
    });
}

/// TLS ends at the gateway (the client checks its certificate and needs
/// ALPN h2); the gateway speaks h2c to the server.
#[test]
fn interop_cases_over_tls_with_alpn_h2() {
    let s = setup("tls");
    let ca = s.ca_file();
    let cases = ["large_unary", "ping_pong", "custom_metadata"];
    run_cases(&cases, s.ports.https, Some(&ca), || s.context());
}

/// The route matches grpc.testing.TestService only: a call to another
/// service is answered by the gateway itself, as gRPC UNIMPLEMENTED in a
/// trailers-only response (HTTP 200, no body), not as a bare HTTP 404
/// (which a gRPC client would also map to UNIMPLEMENTED).
#[test]
fn unrouted_service_is_unimplemented() {
    let s = setup("unimplemented");
    let run = run_client("unimplemented_service", s.ports.h2c, None);
    assert!(
        run.status.success(),
        "{}: {}\ngateway log:\n{}",
        run.status,
        run.output,
        s.gateway.stderr()
    );
    let (verbose, body) = curl_grpc(s.ports.h2c, "/nope.Svc/M", &[]);
    assert_trailers_only(&verbose, &body, 12);
    // Calls no route took are counted under the empty route label.
    wait_grpc_count(&s, "", "12", 2);
}

/// The only endpoint refuses connections: the call fails UNAVAILABLE with
/// a status the gateway wrote (HTTP 200, grpc-status 14), not one the
/// client made up from an HTTP 502/503 ("unexpected HTTP status code").
#[test]
fn closed_backend_port_is_unavailable() {
    let s = setup("unavailable");
    let run = run_client("empty_unary", s.ports.dead, None);
    assert!(!run.status.success(), "succeeded: {}", run.output);
    assert!(
        run.output.contains("code = Unavailable"),
        "not UNAVAILABLE: {}",
        run.output
    );
    assert!(
        !run.output.contains("unexpected HTTP status code"),
        "UNAVAILABLE only from a non-gRPC HTTP answer: {}",
        run.output
    );
    let (verbose, body) = curl_grpc(s.ports.dead, "/grpc.testing.TestService/EmptyCall", &[]);
    assert_trailers_only(&verbose, &body, 14);
    wait_grpc_count(&s, "default/dead/0", "14", 2);
}

/// The client's `grpc-timeout` bounds the call at the gateway too: the
/// backend never answers, and the gateway (not curl, which would wait 10 s)
/// ends the call DEADLINE_EXCEEDED, well before its 5 s connect timeout.
#[test]
fn grpc_timeout_is_enforced_by_the_gateway() {
    let s = setup("deadline");
    let path = "/grpc.testing.TestService/EmptyCall";
    let (verbose, body) = curl_grpc(s.ports.silent, path, &["-H", "grpc-timeout: 200m"]);
    assert_trailers_only(&verbose, &body, 4);
    assert!(
        verbose
            .to_ascii_lowercase()
            .contains("grpc-message: request timed out"),
        "{verbose}"
    );
    wait_grpc_count(&s, "default/silent/0", "4", 1);
}

/// The interop server over TLS (a certificate for `backend.test` from the
/// test CA) behind a GRPCRoute whose Service a BackendTLSPolicy covers:
/// the gateway verifies the backend against the CA in a ConfigMap and
/// speaks HTTP/2 over TLS (ALPN h2) to it, clients speak h2c to the
/// gateway. Unary, streaming and metadata cases pass end to end; the
/// policy reports Accepted.
#[test]
fn grpc_to_a_tls_backend_under_a_backend_tls_policy() {
    let bins = interop();
    let certs = TempDir::new("grpc-tls-backend-certs");
    support::pki::ca(certs.path(), "ca");
    support::pki::server(certs.path(), "backend", "ca", "DNS:backend.test");
    let backend_port = free_port();
    let cert = |f: &str| certs.path().join(f).to_string_lossy().into_owned();
    let _server = Running(
        Command::new(&bins.server)
            .args(["-port", &backend_port.to_string(), "-use_tls"])
            .args(["-tls_cert_file", &cert("backend.crt")])
            .args(["-tls_key_file", &cert("backend.key")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let port = free_port();
    let ca_pem = std::fs::read_to_string(certs.path().join("ca.crt")).unwrap();
    let documents = [
        format!(
            "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: grpc
spec:
  gatewayClassName: coxswain
  listeners:
  - name: h2c
    protocol: HTTP
    port: {port}
"
        ),
        loopback_service("secure", backend_port, &[]),
        test_service_route("secure", &["h2c"], "secure", backend_port),
        format!(
            "apiVersion: v1
kind: ConfigMap
metadata:
  name: backend-ca
data:
  ca.crt: |
{}---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata:
  name: secure
spec:
  targetRefs:
  - {{group: \"\", kind: Service, name: secure}}
  validation:
    hostname: backend.test
    caCertificateRefs:
    - {{group: \"\", kind: ConfigMap, name: backend-ca}}
",
            indent(&ca_pem, 4)
        ),
    ];
    let config = TempDir::new("grpc-tls-backend");
    config.write("grpc.yaml", &documents.join("---\n"));
    wait_for("the TLS interop server", || {
        TcpStream::connect(("127.0.0.1", backend_port)).is_ok()
    });
    let gateway = Gateway::start(config, port, free_port());
    wait_for("the gateway's listener", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let cases = [
        "empty_unary",
        "large_unary",
        "client_streaming",
        "server_streaming",
        "ping_pong",
        "custom_metadata",
    ];
    let policy = gateway.status_of("BackendTLSPolicy", "secure");
    run_cases(&cases, port, None, || {
        format!(
            "BackendTLSPolicy: {policy:?}\nGRPCRoute: {:?}\ngateway log:\n{}",
            gateway.status_of("GRPCRoute", "secure"),
            gateway.stderr()
        )
    });
    let conditions = policy
        .as_ref()
        .map(|p| p["ancestors"][0]["conditions"].clone());
    assert!(
        conditions
            .as_ref()
            .and_then(|c| c.as_array())
            .is_some_and(|c| c
                .iter()
                .any(|c| c["type"] == "Accepted" && c["status"] == "True")),
        "{policy:?}"
    );
}

/// grpcurl through the gateway, discovering everything by server
/// reflection (a bidirectional stream routed by its own GRPCRoute rule):
/// `list` and `describe` see the TestService, a JSON request is encoded
/// from the reflected schema and its answer decoded; a method the routes
/// do not cover is UNIMPLEMENTED from the gateway.
#[test]
fn grpcurl_works_through_reflection() {
    let s = setup("grpcurl");
    let target = format!("127.0.0.1:{}", s.ports.h2c);
    let grpcurl = |args: &[&str]| {
        let out = Command::new(&interop().grpcurl)
            .args(["-plaintext", "-max-time", "10"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let context = || s.context();

    let (ok, services, err) = grpcurl(&[&target, "list"]);
    assert!(ok, "list: {err}\n{}", context());
    assert!(
        services.lines().any(|l| l == "grpc.testing.TestService"),
        "{services}"
    );

    let (ok, described, err) =
        grpcurl(&[&target, "describe", "grpc.testing.TestService.UnaryCall"]);
    assert!(ok, "describe: {err}\n{}", context());
    assert!(
        described.contains(
            "rpc UnaryCall ( .grpc.testing.SimpleRequest ) returns ( .grpc.testing.SimpleResponse )"
        ),
        "{described}"
    );

    let request = r#"{"responseSize": 7, "fillUsername": false}"#;
    let (ok, answer, err) =
        grpcurl(&["-d", request, &target, "grpc.testing.TestService/UnaryCall"]);
    assert!(ok, "UnaryCall: {err}\n{}", context());
    let answer: serde_json::Value =
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
    // Seven zero bytes, base64.
    assert_eq!(answer["payload"]["body"], "AAAAAAAAAA==", "{answer}");

    let (ok, _, err) = grpcurl(&[
        &target,
        "grpc.testing.UnimplementedService/UnimplementedCall",
    ]);
    assert!(!ok, "an unrouted call succeeded");
    // The schema resolves (test.proto declares the service), the route
    // does not: the gateway's own answer.
    assert!(
        err.contains("Code: Unimplemented") && err.contains("Message: no route matched"),
        "{err}"
    );
}
