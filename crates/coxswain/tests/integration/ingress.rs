//! Classic Ingress end to end in standalone mode: the real `coxswain run`
//! serving an IngressClass + Ingress from files on the ingress ports, named
//! `coxswain echo` processes as backends and curl as the client. Proves
//! routing by host and path type, single-label wildcards, the default
//! backend, 404 without one, TLS by SNI, status.loadBalancer on /status,
//! and `coxswain check` reporting a refused resource backend.

use crate::support;

use std::process::Command;

use support::pki::{ca, server};
use support::*;

fn backend(service: &str, port: u16) -> String {
    format!("{{service: {{name: {service}, port: {{number: {port}}}}}}}")
}

/// The Ingress under test; `default` adds a defaultBackend.
fn ingress(ports: &Ports, default: bool) -> String {
    let default_backend = if default {
        format!(
            "  defaultBackend: {}\n",
            backend("fallback", ports.fallback)
        )
    } else {
        String::new()
    };
    format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: site
spec:
  ingressClassName: coxswain
{default_backend}  tls:
  - hosts: [secure.test]
    secretName: site-cert
  rules:
  - host: exact.test
    http:
      paths:
      - {{path: /exact, pathType: Exact, backend: {exact}}}
      - {{path: /app, pathType: Prefix, backend: {prefix}}}
  - host: \"*.wild.test\"
    http:
      paths:
      - {{path: /, pathType: ImplementationSpecific, backend: {wild}}}
  - host: secure.test
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {prefix}}}
",
        exact = backend("exact", ports.exact),
        prefix = backend("prefix", ports.prefix),
        wild = backend("wild", ports.wild),
    )
}

fn certificate_secret(certs: &TempDir) -> String {
    let read = |f: &str| std::fs::read_to_string(certs.path().join(f)).unwrap();
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: site-cert
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}",
        indent(&read("site.crt"), 4),
        indent(&read("site.key"), 4),
    )
}

struct Ports {
    http: u16,
    https: u16,
    exact: u16,
    prefix: u16,
    wild: u16,
    fallback: u16,
}

impl Ports {
    fn new() -> Self {
        Ports {
            http: free_port(),
            https: free_port(),
            exact: free_port(),
            prefix: free_port(),
            wild: free_port(),
            fallback: free_port(),
        }
    }
}

/// (status, pod that answered) for a GET of `path` with Host `host`.
fn get(ports: &Ports, host: &str, path: &str) -> (u16, Option<String>) {
    let url = format!("http://127.0.0.1:{}{path}", ports.http);
    let (code, body) = curl_get(&["-H", &format!("Host: {host}")], &url);
    let pod = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["pod"].as_str().map(str::to_string));
    (code, pod)
}

fn pod(name: &str) -> (u16, Option<String>) {
    (200, Some(name.to_string()))
}

#[test]
fn ingress_routes_by_host_path_and_sni() {
    let ports = Ports::new();
    let _echoes = [
        echo("exact", ports.exact),
        echo("prefix", ports.prefix),
        echo("wild", ports.wild),
        echo("fallback", ports.fallback),
    ];
    let certs = TempDir::new("ingress-pki");
    ca(certs.path(), "ca");
    server(certs.path(), "site", "ca", "DNS:secure.test");

    let config = TempDir::new("ingress");
    config.write("class.yaml", INGRESS_CLASS);
    config.write("secret.yaml", &certificate_secret(&certs));
    for (name, port) in [
        ("exact", ports.exact),
        ("prefix", ports.prefix),
        ("wild", ports.wild),
        ("fallback", ports.fallback),
    ] {
        config.write(&format!("{name}.yaml"), &loopback_service(name, port, &[]));
    }
    config.write("ingress.yaml", &ingress(&ports, true));
    let (http, https) = (ports.http.to_string(), ports.https.to_string());
    let gateway = Gateway::start_with(
        config,
        ports.http,
        free_port(),
        &["--ingress-http-port", &http, "--ingress-https-port", &https],
    );
    wait_for("the Ingress to be served", || {
        get(&ports, "exact.test", "/exact") == pod("exact")
    });

    // Exact matches only the path itself; Prefix is element-wise.
    assert_eq!(get(&ports, "exact.test", "/exact/more"), pod("fallback"));
    assert_eq!(get(&ports, "exact.test", "/app"), pod("prefix"));
    assert_eq!(get(&ports, "exact.test", "/app/x"), pod("prefix"));
    assert_eq!(get(&ports, "exact.test", "/apple"), pod("fallback"));
    // A wildcard host stands for exactly one label.
    assert_eq!(get(&ports, "a.wild.test", "/any"), pod("wild"));
    assert_eq!(get(&ports, "a.b.wild.test", "/any"), pod("fallback"));
    assert_eq!(get(&ports, "wild.test", "/any"), pod("fallback"));
    // Anything else goes to the default backend.
    assert_eq!(get(&ports, "nobody.test", "/"), pod("fallback"));

    // TLS: the certificate for secure.test is presented by SNI.
    let resolve = format!("secure.test:{}:127.0.0.1", ports.https);
    let ca_file = certs.path().join("ca.crt");
    let url = format!("https://secure.test:{}/tls", ports.https);
    let (code, body) = curl_get(
        &["--resolve", &resolve, "--cacert", ca_file.to_str().unwrap()],
        &url,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(echo_json(&body)["pod"], "prefix");

    // status.loadBalancer: the bind address and both ingress ports.
    let status = gateway
        .status_of("Ingress", "site")
        .expect("Ingress status");
    let lb = &status["loadBalancer"]["ingress"][0];
    assert_eq!(lb["ip"], "127.0.0.1");
    let served: Vec<i64> = lb["ports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["port"].as_i64())
        .collect();
    assert_eq!(served, vec![i64::from(ports.http), i64::from(ports.https)]);

    // Without a default backend, what no rule takes is 404.
    gateway
        .config
        .write_atomic("ingress.yaml", &ingress(&ports, false));
    wait_for("the default backend to go", || {
        get(&ports, "nobody.test", "/").0 == 404
    });
    assert_eq!(get(&ports, "a.b.wild.test", "/any").0, 404);
    assert_eq!(get(&ports, "exact.test", "/exact/more").0, 404);
    assert_eq!(get(&ports, "exact.test", "/exact"), pod("exact"));
}

fn check(dir: &TempDir) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["check", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn check_reports_load_balancer_and_refused_resource_backend() {
    let dir = TempDir::new("ingress-check");
    dir.write("class.yaml", INGRESS_CLASS);
    dir.write("web.yaml", &loopback_service("web", 8080, &[]));
    dir.write(
        "ingress.yaml",
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  ingressClassName: coxswain
  rules:
  - http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 8080}}}}
",
    );
    let (code, text) = check(&dir);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("Ingress default/web: loadBalancer 0.0.0.0:80"),
        "{text}"
    );

    dir.write(
        "bucket.yaml",
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: bucket
spec:
  ingressClassName: coxswain
  defaultBackend:
    resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: assets}
",
    );
    let (code, text) = check(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("Ingress default/bucket")
            && text.contains(
                "resource backend k8s.example.com/StorageBucket \"assets\" is not supported"
            ),
        "{text}"
    );
}
