//! Client-certificate validation in standalone mode with real clients:
//! curl with a valid certificate, an expired one, one from another CA, and
//! none; AllowInsecureFallback; a CA rotation while requests keep coming.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use support::pki::{ca, client, openssl};
use support::*;

fn config_yaml(strict: u16, fallback: u16, echo: u16, certs: &Path, ca_pem: &str) -> String {
    let read = |f: &str| std::fs::read_to_string(certs.join(f)).unwrap();
    format!(
        "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: mtls
spec:
  gatewayClassName: coxswain
  tls:
    frontend:
      default:
        validation:
          caCertificateRefs:
          - {{group: \"\", kind: ConfigMap, name: client-ca}}
      perPort:
      - port: {fallback}
        tls:
          validation:
            mode: AllowInsecureFallback
            caCertificateRefs:
            - {{group: \"\", kind: ConfigMap, name: client-ca}}
  listeners:
  - name: strict
    protocol: HTTPS
    port: {strict}
    tls: {{certificateRefs: [{{name: server}}]}}
  - name: fallback
    protocol: HTTPS
    port: {fallback}
    tls: {{certificateRefs: [{{name: server}}]}}
---
apiVersion: v1
kind: Secret
metadata:
  name: server
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: client-ca
data:
  ca.crt: |
{}---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
  - port: {echo}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- port: {echo}
endpoints:
- addresses: [127.0.0.1]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: all
spec:
  parentRefs:
  - name: mtls
  rules:
  - backendRefs:
    - name: echo
      port: {echo}
",
        indent(&read("server.crt"), 4),
        indent(&read("server.key"), 4),
        indent(ca_pem, 4),
    )
}

struct Setup {
    gateway: Gateway,
    certs: TempDir,
    strict: u16,
    fallback: u16,
    echo: u16,
}

impl Setup {
    fn new(tag: &str) -> Setup {
        let certs = TempDir::new(&format!("{tag}-certs"));
        let dir = certs.path();
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost",
                "-keyout",
                "server.key",
                "-out",
                "server.crt",
            ],
        );
        ca(dir, "ca");
        ca(dir, "other-ca");
        ca(dir, "next-ca");
        client(dir, "valid", "ca", None);
        client(
            dir,
            "expired",
            "ca",
            Some(("20200101000000Z", "20200201000000Z")),
        );
        client(dir, "stranger", "other-ca", None);
        client(dir, "next", "next-ca", None);
        let (strict, fallback, echo) = (free_port(), free_port(), free_port());
        let config = TempDir::new(tag);
        let ca_pem = std::fs::read_to_string(dir.join("ca.crt")).unwrap();
        config.write(
            "mtls.yaml",
            &config_yaml(strict, fallback, echo, dir, &ca_pem),
        );
        let gateway = Gateway::start(config, free_port(), echo);
        Setup {
            gateway,
            certs,
            strict,
            fallback,
            echo,
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.certs.path().join(file)
    }

    /// curl's HTTP status for one request presenting `cert` (none: `None`);
    /// 0 when the handshake failed.
    fn curl(&self, port: u16, cert: Option<&str>) -> u16 {
        let mut args = vec![
            "--cacert".to_string(),
            self.path("server.crt").display().to_string(),
        ];
        if let Some(name) = cert {
            args.extend([
                "--cert".into(),
                self.path(&format!("{name}.crt")).display().to_string(),
                "--key".into(),
                self.path(&format!("{name}.key")).display().to_string(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl_get(&args, &format!("https://localhost:{port}/")).0
    }
}

#[test]
fn only_certificates_from_the_ca_get_in_unless_fallback() {
    let s = Setup::new("mtls-modes");
    assert_eq!(
        s.curl(s.strict, Some("valid")),
        200,
        "{}",
        s.gateway.stderr()
    );
    assert_eq!(s.curl(s.strict, None), 0, "no certificate");
    assert_eq!(s.curl(s.strict, Some("expired")), 0, "expired certificate");
    assert_eq!(
        s.curl(s.strict, Some("stranger")),
        0,
        "another CA's certificate"
    );
    for cert in [Some("valid"), None, Some("expired"), Some("stranger")] {
        assert_eq!(s.curl(s.fallback, cert), 200, "fallback with {cert:?}");
    }
}

/// The CA bundle is rotated (new CA added, then the old one removed) while
/// a client keeps sending requests with the old certificate: none fails
/// until the old CA is gone, and a connection opened before the last step
/// keeps working after it.
#[test]
fn rotating_the_ca_drops_no_request() {
    let s = Setup::new("mtls-rotation");
    let read = |f: &str| std::fs::read_to_string(s.path(f)).unwrap();
    let write_ca = |pem: &str| {
        let yaml = config_yaml(s.strict, s.fallback, s.echo, s.certs.path(), pem);
        s.gateway.config.write_atomic("mtls.yaml", &yaml);
    };
    // A connection with the old certificate, opened now and used later.
    let mut open = Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-connect",
            &format!("localhost:{}", s.strict),
        ])
        .arg("-CAfile")
        .arg(s.path("server.crt"))
        .arg("-cert")
        .arg(s.path("valid.crt"))
        .arg("-key")
        .arg(s.path("valid.key"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut to_server = open.stdin.take().unwrap();
    let mut from_server = BufReader::new(open.stdout.take().unwrap());
    let mut get = |to: &mut std::process::ChildStdin| {
        to.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut status = String::new();
        from_server.read_line(&mut status).unwrap();
        // Skip the rest of the response: headers, then the JSON line.
        let mut line = String::new();
        let mut length = 0usize;
        loop {
            line.clear();
            from_server.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; length];
        std::io::Read::read_exact(&mut from_server, &mut body).unwrap();
        status
    };
    assert!(get(&mut to_server).contains("200"));

    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let load = std::thread::spawn({
        let (stop, sent, failed) = (stop.clone(), sent.clone(), failed.clone());
        let (cacert, cert, key) = (
            s.path("server.crt"),
            s.path("valid.crt"),
            s.path("valid.key"),
        );
        let url = format!("https://localhost:{}/", s.strict);
        move || {
            while !stop.load(Ordering::SeqCst) {
                let args = [
                    "--cacert",
                    cacert.to_str().unwrap(),
                    "--cert",
                    cert.to_str().unwrap(),
                    "--key",
                    key.to_str().unwrap(),
                ];
                if curl_get(&args, &url).0 != 200 {
                    failed.fetch_add(1, Ordering::SeqCst);
                }
                sent.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    // Step 1: the bundle holds both CAs; the new client certificate works.
    write_ca(&format!("{}{}", read("ca.crt"), read("next-ca.crt")));
    wait_for("the new CA accepted", || {
        s.curl(s.strict, Some("next")) == 200
    });
    let before = sent.load(Ordering::SeqCst);
    wait_for("more requests under the new bundle", || {
        sent.load(Ordering::SeqCst) > before + 5
    });
    stop.store(true, Ordering::SeqCst);
    load.join().unwrap();
    assert_eq!(
        failed.load(Ordering::SeqCst),
        0,
        "of {} requests",
        sent.load(Ordering::SeqCst)
    );
    // Step 2: the old CA goes; new connections with its certificate fail,
    // the connection opened before still serves.
    write_ca(&read("next-ca.crt"));
    wait_for("the old CA refused", || {
        s.curl(s.strict, Some("valid")) == 0
    });
    assert_eq!(s.curl(s.strict, Some("next")), 200);
    assert!(
        get(&mut to_server).contains("200"),
        "the established connection was dropped"
    );
    drop(to_server);
    let _ = open.kill();
    let _ = open.wait();
}
