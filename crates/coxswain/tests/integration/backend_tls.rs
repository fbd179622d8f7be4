//! BackendTLSPolicy and the Gateway's backend client certificate in
//! standalone mode, against a real TLS server (`openssl s_server`) that
//! requires a client certificate: the gateway verifies the backend, presents
//! its certificate, reports the policy's status, and refuses a backend
//! whose certificate names another host.

use crate::support;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use support::pki::{ca, client, server};
use support::*;

/// `openssl s_server -www` on `port`: answers every GET with a page
/// describing the session (the client certificate included), and refuses
/// handshakes without a certificate from `client_ca`.
struct TlsServer(Child);

impl TlsServer {
    fn start(dir: &Path, port: u16, cert: &str, client_ca: &str) -> TlsServer {
        let child = Command::new("openssl")
            .current_dir(dir)
            .args(["s_server", "-www", "-accept", &format!("127.0.0.1:{port}")])
            .args([
                "-cert",
                &format!("{cert}.crt"),
                "-key",
                &format!("{cert}.key"),
            ])
            .args(["-Verify", "1", "-CAfile", &format!("{client_ca}.crt")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("s_server to listen", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        TlsServer(child)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Service `name` on `port`, its one endpoint on loopback, a route
/// `/name` to it, and a BackendTLSPolicy for it with `hostname`.
fn backend_yaml(name: &str, port: u16, hostname: &str) -> String {
    let service = loopback_service(name, port, &[]);
    format!(
        "---
{service}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs:
  - name: gw
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /{name}}}
    backendRefs:
    - name: {name}
      port: {port}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata:
  name: {name}
spec:
  targetRefs:
  - {{group: \"\", kind: Service, name: {name}}}
  validation:
    hostname: {hostname}
    caCertificateRefs:
    - {{group: \"\", kind: ConfigMap, name: backend-ca}}
"
    )
}

fn config_yaml(http: u16, certs: &Path, backends: &[String]) -> String {
    let read = |f: &str| std::fs::read_to_string(certs.join(f)).unwrap();
    format!(
        "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: gw
spec:
  gatewayClassName: coxswain
  tls:
    backend:
      clientCertificateRef: {{name: gateway-client}}
  listeners:
  - name: http
    protocol: HTTP
    port: {http}
---
apiVersion: v1
kind: Secret
metadata:
  name: gateway-client
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}---
apiVersion: v1
kind: ConfigMap
metadata:
  name: backend-ca
data:
  ca.crt: |
{}{}",
        indent(&read("gateway.crt"), 4),
        indent(&read("gateway.key"), 4),
        indent(&read("backend-ca.crt"), 4),
        backends.concat(),
    )
}

fn accepted(status: &serde_json::Value) -> Vec<(String, String)> {
    status["ancestors"][0]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or("").to_string(),
                format!(
                    "{}/{}",
                    c["status"].as_str().unwrap_or(""),
                    c["reason"].as_str().unwrap_or("")
                ),
            )
        })
        .collect()
}

#[test]
fn the_gateway_verifies_tls_backends_and_presents_its_client_certificate() {
    let certs = TempDir::new("backend-tls-certs");
    let dir = certs.path();
    ca(dir, "backend-ca");
    ca(dir, "client-ca");
    server(dir, "svc", "backend-ca", "DNS:svc.test");
    client(dir, "gateway", "client-ca", None);

    let (good_port, wrong_port, http) = (free_port(), free_port(), free_port());
    let _good = TlsServer::start(dir, good_port, "svc", "client-ca");
    let _wrong = TlsServer::start(dir, wrong_port, "svc", "client-ca");
    let config = TempDir::new("backend-tls");
    config.write(
        "gateway.yaml",
        &config_yaml(
            http,
            dir,
            &[
                backend_yaml("good", good_port, "svc.test"),
                // Same server, but the policy expects another name.
                backend_yaml("wrong", wrong_port, "other.test"),
            ],
        ),
    );
    let gateway = Gateway::start(config, http, free_port());

    let (code, body) = curl_get(&[], &format!("http://127.0.0.1:{http}/good"));
    assert_eq!(code, 200, "{body}\n{}", gateway.stderr());
    assert!(
        body.contains("Client certificate") && body.contains("CN=gateway"),
        "the backend saw the gateway's client certificate: {body}"
    );

    let (code, _) = curl_get(&[], &format!("http://127.0.0.1:{http}/wrong"));
    assert_eq!(code, 502, "a certificate for another name is refused");

    for name in ["good", "wrong"] {
        let status = gateway.status_of("BackendTLSPolicy", name).unwrap();
        assert_eq!(status["ancestors"][0]["ancestorRef"]["name"], "gw");
        assert_eq!(
            accepted(&status),
            [
                ("Accepted".to_string(), "True/Accepted".to_string()),
                ("ResolvedRefs".to_string(), "True/ResolvedRefs".to_string()),
            ],
            "{name}"
        );
    }
}
