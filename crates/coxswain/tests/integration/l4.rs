//! TLS passthrough and termination, TCP and UDP listeners in standalone
//! mode, driven with real clients (curl, openssl s_client, dig) and real
//! servers (openssl s_server, dnsmasq).

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::*;

/// A child process killed when the test ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A self-signed certificate for `name` (cert.pem, key.pem in `dir`).
fn certificate(dir: &TempDir, name: &str) -> (String, String) {
    let cert = dir.path().join(format!("{name}.crt"));
    let key = dir.path().join(format!("{name}.key"));
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ])
        .args(["-days", "2", "-subj", &format!("/CN={name}")])
        .args(["-addext", &format!("subjectAltName=DNS:{name}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    (
        std::fs::read_to_string(cert).unwrap(),
        std::fs::read_to_string(key).unwrap(),
    )
}

fn route(
    kind: &str,
    name: &str,
    section: &str,
    hostnames: &[&str],
    backend: &str,
    port: u16,
) -> String {
    let hosts: String = if hostnames.is_empty() {
        String::new()
    } else {
        let list: String = hostnames.iter().map(|h| format!("  - {h}\n")).collect();
        format!("  hostnames:\n{list}")
    };
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: {kind}
metadata:
  name: {name}
spec:
  parentRefs:
  - name: l4
    sectionName: {section}
{hosts}  rules:
  - backendRefs:
    - name: {backend}
      port: {port}
"
    )
}

struct Ports {
    passthrough: u16,
    terminate: u16,
    tcp: u16,
    udp: u16,
}

fn gateway_yaml(p: &Ports) -> String {
    format!(
        "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: l4
spec:
  gatewayClassName: coxswain
  listeners:
  - name: passthrough
    protocol: TLS
    port: {}
    hostname: \"*.example.com\"
    tls:
      mode: Passthrough
  - name: terminate
    protocol: TLS
    port: {}
    hostname: tls.example.com
    tls:
      mode: Terminate
      certificateRefs:
      - name: gateway-cert
  - name: tcp
    protocol: TCP
    port: {}
  - name: udp
    protocol: UDP
    port: {}
",
        p.passthrough, p.terminate, p.tcp, p.udp
    )
}

fn tls_secret(name: &str, cert: &str, key: &str) -> String {
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: {name}
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}",
        indent(cert, 4),
        indent(key, 4)
    )
}

/// A TCP backend answering each connection's first line with
/// `<tag>:<line>` and closing.
fn line_backend(tag: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).is_ok() {
                    let _ = (&stream).write_all(format!("{tag}:{line}").as_bytes());
                }
            });
        }
    });
    port
}

/// A TCP backend that reads to EOF (the client's half-close must arrive)
/// and then answers with the byte count.
fn count_backend() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut all = Vec::new();
                if stream.read_to_end(&mut all).is_ok() {
                    let _ = stream.write_all(format!("got {} bytes", all.len()).as_bytes());
                }
            });
        }
    });
    port
}

struct Setup {
    gateway: Gateway,
    ports: Ports,
    certs: TempDir,
    _servers: Vec<Running>,
}

/// The Gateway with all four listeners; openssl s_server behind the
/// passthrough listener, dnsmasq behind the UDP one.
fn setup(tag: &str) -> Setup {
    let certs = TempDir::new(&format!("{tag}-certs"));
    certificate(&certs, "abc.example.com");
    let (gateway_cert, gateway_key) = certificate(&certs, "tls.example.com");
    let tls_port = free_port();
    let s_server = Command::new("openssl")
        .args([
            "s_server",
            "-www",
            "-quiet",
            "-accept",
            &tls_port.to_string(),
        ])
        .arg("-cert")
        .arg(certs.path().join("abc.example.com.crt"))
        .arg("-key")
        .arg(certs.path().join("abc.example.com.key"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dns_port = free_port();
    let dnsmasq = Command::new("dnsmasq")
        .args([
            "--no-daemon",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
        ])
        .args(["--listen-address=127.0.0.1", &format!("--port={dns_port}")])
        .args(["--address=/foo.test/10.9.8.7", "--user=root"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ports = Ports {
        passthrough: free_port(),
        terminate: free_port(),
        tcp: free_port(),
        udp: free_port(),
    };
    let config = TempDir::new(tag);
    config.write("gateway.yaml", &gateway_yaml(&ports));
    config.write(
        "secret.yaml",
        &tls_secret("gateway-cert", &gateway_cert, &gateway_key),
    );
    let line = line_backend("plain");
    let count = count_backend();
    let services = [
        loopback_service("tls-backend", tls_port, &["protocol: TCP"]),
        loopback_service("line", line, &["protocol: TCP"]),
        loopback_service("count", count, &["protocol: TCP"]),
        loopback_service("dns", dns_port, &["protocol: UDP"]),
    ];
    config.write("services.yaml", &services.join("---\n"));
    let routes = [
        route(
            "TLSRoute",
            "passthrough",
            "passthrough",
            &["abc.example.com"],
            "tls-backend",
            tls_port,
        ),
        route(
            "TLSRoute",
            "terminate",
            "terminate",
            &["tls.example.com"],
            "line",
            line,
        ),
        route("TCPRoute", "count", "tcp", &[], "count", count),
        route("UDPRoute", "dns", "udp", &[], "dns", dns_port),
    ];
    config.write("routes.yaml", &routes.join("---\n"));
    wait_for("openssl s_server", || {
        TcpStream::connect(("127.0.0.1", tls_port)).is_ok()
    });
    let gateway = Gateway::start(config, free_port(), free_port());
    wait_for("the TCP listener", || {
        TcpStream::connect(("127.0.0.1", ports.tcp)).is_ok()
    });
    Setup {
        gateway,
        ports,
        certs,
        _servers: vec![Running(s_server), Running(dnsmasq)],
    }
}

/// curl verifies the certificate against the *backend's* CA: the gateway
/// never terminated TLS.
#[test]
fn tls_passthrough_reaches_the_backend_with_its_own_certificate() {
    let s = setup("passthrough");
    let cacert = s.certs.path().join("abc.example.com.crt");
    let port = s.ports.passthrough;
    let resolve = format!("abc.example.com:{port}:127.0.0.1");
    let url = format!("https://abc.example.com:{port}/");
    let (code, body) = curl_get(
        &["--cacert", cacert.to_str().unwrap(), "--resolve", &resolve],
        &url,
    );
    assert_eq!(code, 200, "{}", s.gateway.stderr());
    assert!(body.contains("s_server"), "{body}");
}

/// openssl s_client with an unknown name and without SNI: no certificate,
/// the connection is closed (no fallthrough to another listener).
#[test]
fn tls_without_sni_or_with_an_unknown_name_is_closed() {
    let s = setup("no-sni");
    let connect = format!("127.0.0.1:{}", s.ports.passthrough);
    for server_name in [None, Some("unknown.example.org")] {
        let mut cmd = Command::new("openssl");
        cmd.args(["s_client", "-connect", &connect]);
        match server_name {
            Some(name) => cmd.args(["-servername", name]),
            None => cmd.arg("-noservername"),
        };
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("no peer certificate available"),
            "{server_name:?}: {text}"
        );
    }
}

/// TLS ends at the gateway with its own certificate; the backend reads
/// plain text.
#[test]
fn tls_terminate_forwards_plain_text() {
    let s = setup("terminate");
    let cafile = s.certs.path().join("tls.example.com.crt");
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-verify_return_error",
            "-servername",
            "tls.example.com",
        ])
        .args(["-connect", &format!("127.0.0.1:{}", s.ports.terminate)])
        .arg("-CAfile")
        .arg(&cafile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = child.wait();
    assert_eq!(out, "plain:hello\n", "{}", s.gateway.stderr());
}

/// The client half-closes; the backend sees EOF, answers, and the answer
/// still comes back over the other half.
#[test]
fn tcp_propagates_half_close() {
    let s = setup("tcp");
    let mut stream = TcpStream::connect(("127.0.0.1", s.ports.tcp)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&[7u8; 100_000]).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert_eq!(reply, "got 100000 bytes");
}

/// dig asks dnsmasq through the UDPRoute, from a new source port each time.
#[test]
fn dns_over_a_udp_route() {
    let s = setup("dns");
    // Five distinct source ports, chosen while all five are held: left to
    // itself the kernel may give two dig runs the same one (one session).
    let probes: Vec<UdpSocket> = (0..5)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let sources: Vec<u16> = probes
        .iter()
        .map(|p| p.local_addr().unwrap().port())
        .collect();
    drop(probes);
    for source in sources {
        let out = Command::new("dig")
            .args([
                "@127.0.0.1",
                "-p",
                &s.ports.udp.to_string(),
                "-b",
                &format!("127.0.0.1#{source}"),
                "+short",
                "+tries=3",
                "+time=2",
                "foo.test",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "10.9.8.7",
            "{}",
            s.gateway.stderr()
        );
    }
    let (_, metrics) = s.gateway.admin_get("/metrics").unwrap();
    assert!(
        metrics.contains("coxswain_proxy_l4_connections_total{route=\"default/dns/0\"} 5"),
        "{metrics}"
    );
    // A datagram from yet another port is its own session.
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.connect(("127.0.0.1", s.ports.udp)).unwrap();
    // A minimal DNS query for foo.test, type A.
    let mut query = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    query.extend_from_slice(b"\x03foo\x04test\x00\x00\x01\x00\x01");
    client.send(&query).unwrap();
    let mut buf = [0u8; 512];
    let n = client.recv(&mut buf).unwrap();
    assert!(
        n > 12 && buf[0] == 0x12 && buf[1] == 0x34,
        "a reply to our id"
    );
}

/// `coxswain check` reports the L4 routes like any other.
#[test]
fn check_reports_l4_routes() {
    let s = setup("check");
    let out = Command::new(BIN)
        .args(["check", "-o", "json"])
        .arg(s.gateway.config.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let list: serde_json::Value = serde_json::from_str(&text).unwrap();
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["status"]["parents"][0]["conditions"][0]["status"] == "True")
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for kind in ["TLSRoute", "TCPRoute", "UDPRoute"] {
        assert!(kinds.contains(&kind), "{kind} not accepted: {text}");
    }
}
