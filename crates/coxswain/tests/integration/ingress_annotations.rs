//! Ingress annotations end to end in standalone mode: the real `coxswain
//! run` serving annotated Ingresses from files, named `coxswain echo`
//! processes as backends and curl as the client. Proves basic auth
//! (401/200), max-body-size (413), an address deny list (403), a regex
//! rewrite-target (the path the backend sees), ssl-redirect (308 on plain
//! HTTP, served on HTTPS), a canary by header and by weight (0 and 100),
//! a CORS preflight, and that an Ingress whose security annotation cannot
//! be enforced answers 500 without affecting the others.

use crate::support;

use std::process::Command;

use support::pki::{ca, server};
use support::*;

/// An Ingress for `host` with one Prefix `path` to Service `service`
/// (port 80 of the loopback Services below); `annotations` are YAML lines.
fn ingress(name: &str, host: &str, path: &str, service: &str, annotations: &[&str]) -> String {
    let annotations: String = annotations.iter().map(|a| format!("    {a}\n")).collect();
    let tls = if host == "redirect.test" {
        "  tls:\n  - {hosts: [redirect.test], secretName: site-cert}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
  annotations:
    kubernetes.io/description: annotated
{annotations}spec:
  ingressClassName: coxswain
{tls}  rules:
  - host: {host}
    http:
      paths:
      - {{path: '{path}', pathType: Prefix, backend: {{service: {{name: {service}, port: {{number: 80}}}}}}}}
"
    )
}

/// A Service `name` on port 80 whose endpoint is 127.0.0.1:`port`.
fn service(name: &str, port: u16) -> String {
    loopback_service(name, port, &[]).replacen(
        &format!("  - port: {port}\n"),
        &format!("  - port: 80\n    targetPort: {port}\n"),
        1,
    )
}

fn htpasswd_secret(user: &str, password: &str) -> String {
    let out = Command::new("openssl")
        .args(["passwd", "-apr1", password])
        .output()
        .unwrap();
    let hash = String::from_utf8(out.stdout).unwrap();
    format!(
        "apiVersion: v1
kind: Secret
metadata:
  name: users
  labels:
    ingress.coxswain-labs.dev/auth-basic: \"true\"
stringData:
  auth: '{user}:{}'
",
        hash.trim()
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

struct Site {
    http: u16,
    https: u16,
}

impl Site {
    /// (status, body) of a request to `host` on the plain port.
    fn get(&self, host: &str, path: &str, extra: &[&str]) -> (u16, String) {
        let url = format!("http://127.0.0.1:{}{path}", self.http);
        let host = format!("Host: {host}");
        let mut args = vec!["-H", host.as_str()];
        args.extend_from_slice(extra);
        curl_get(&args, &url)
    }

    /// The echo pod that answered, if any.
    fn pod(&self, host: &str, path: &str, extra: &[&str]) -> Option<String> {
        let (code, body) = self.get(host, path, extra);
        if code != 200 {
            return None;
        }
        echo_json(&body)["pod"].as_str().map(str::to_string)
    }
}

fn canary_ingress(weight: u32) -> String {
    let weight = format!("nginx.ingress.kubernetes.io/canary-weight: \"{weight}\"");
    ingress(
        "shop-canary",
        "shop.test",
        "/",
        "canary",
        &[
            "nginx.ingress.kubernetes.io/canary: \"true\"",
            "nginx.ingress.kubernetes.io/canary-by-header: X-Canary",
            &weight,
        ],
    )
}

#[test]
fn annotations_are_enforced_end_to_end() {
    let (main_port, canary_port) = (free_port(), free_port());
    let _echoes = [echo("main", main_port), echo("canary", canary_port)];
    let certs = TempDir::new("ingress-annotations-pki");
    ca(certs.path(), "ca");
    server(certs.path(), "site", "ca", "DNS:redirect.test");

    let config = TempDir::new("ingress-annotations");
    config.write("class.yaml", INGRESS_CLASS);
    config.write("main.yaml", &service("main", main_port));
    config.write("canary.yaml", &service("canary", canary_port));
    config.write("users.yaml", &htpasswd_secret("alice", "wonder"));
    config.write("cert.yaml", &certificate_secret(&certs));
    let ingresses = [
        (
            "auth",
            ingress(
                "auth",
                "auth.test",
                "/",
                "main",
                &["ingress.coxswain-labs.dev/auth-basic-secret: users"],
            ),
        ),
        (
            "size",
            ingress(
                "size",
                "size.test",
                "/",
                "main",
                &["nginx.ingress.kubernetes.io/proxy-body-size: \"16\""],
            ),
        ),
        (
            "deny",
            ingress(
                "deny",
                "deny.test",
                "/",
                "main",
                &["nginx.ingress.kubernetes.io/denylist-source-range: 127.0.0.0/8"],
            ),
        ),
        (
            "rewrite",
            ingress(
                "rewrite",
                "rewrite.test",
                "/api(/|$)(.*)",
                "main",
                &[
                    "nginx.ingress.kubernetes.io/use-regex: \"true\"",
                    "nginx.ingress.kubernetes.io/rewrite-target: /v2/$2",
                ],
            ),
        ),
        (
            "redirect",
            ingress(
                "redirect",
                "redirect.test",
                "/",
                "main",
                &["nginx.ingress.kubernetes.io/ssl-redirect: \"true\""],
            ),
        ),
        (
            "cors",
            ingress(
                "cors",
                "cors.test",
                "/",
                "main",
                &[
                    "nginx.ingress.kubernetes.io/enable-cors: \"true\"",
                    "nginx.ingress.kubernetes.io/cors-allow-origin: https://app.test",
                ],
            ),
        ),
        ("shop", ingress("shop", "shop.test", "/", "main", &[])),
        (
            "broken",
            ingress(
                "broken",
                "broken.test",
                "/",
                "main",
                &[
                    "nginx.ingress.kubernetes.io/auth-type: digest",
                    "nginx.ingress.kubernetes.io/auth-secret: users",
                ],
            ),
        ),
        ("plain", ingress("plain", "plain.test", "/", "main", &[])),
    ];
    for (name, text) in &ingresses {
        config.write(&format!("ingress-{name}.yaml"), text);
    }
    config.write("ingress-shop-canary.yaml", &canary_ingress(0));
    let site = Site {
        http: free_port(),
        https: free_port(),
    };
    let (http, https) = (site.http.to_string(), site.https.to_string());
    let gateway = Gateway::start_with(
        config,
        site.http,
        free_port(),
        &["--ingress-http-port", &http, "--ingress-https-port", &https],
    );
    wait_for("the Ingresses to be served", || {
        site.pod("plain.test", "/", &[]).as_deref() == Some("main")
    });

    // Basic auth: 401 without credentials, 200 with them.
    assert_eq!(site.get("auth.test", "/", &[]).0, 401);
    assert_eq!(site.get("auth.test", "/", &["-u", "alice:wrong"]).0, 401);
    assert_eq!(
        site.pod("auth.test", "/", &["-u", "alice:wonder"])
            .as_deref(),
        Some("main")
    );

    // max-body-size: a body over 16 bytes is refused.
    let big = "x".repeat(100);
    assert_eq!(site.get("size.test", "/", &["--data-binary", &big]).0, 413);
    assert_eq!(
        site.get("size.test", "/", &["--data-binary", "small"]).0,
        200
    );

    // denylist-source-range: the loopback client is refused.
    assert_eq!(site.get("deny.test", "/", &[]).0, 403);

    // rewrite-target with capture groups: the backend sees the new path.
    let (code, body) = site.get("rewrite.test", "/api/things", &[]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(echo_json(&body)["path"], "/v2/things", "{body}");

    // ssl-redirect: 308 to HTTPS on the plain port; HTTPS serves.
    let url = format!("http://127.0.0.1:{}/page?q=1", site.http);
    let out = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{redirect_url}",
        "-H",
        "Host: redirect.test",
        &url,
    ]);
    let got = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        got,
        format!("308 https://redirect.test:{}/page?q=1", site.https)
    );
    let resolve = format!("redirect.test:{}:127.0.0.1", site.https);
    let ca_file = certs.path().join("ca.crt");
    let (code, body) = curl_get(
        &["--resolve", &resolve, "--cacert", ca_file.to_str().unwrap()],
        &format!("https://redirect.test:{}/page", site.https),
    );
    assert_eq!(code, 200, "{body}");

    // CORS: the preflight is answered by the gateway.
    let url = format!("http://127.0.0.1:{}/", site.http);
    let out = curl(&[
        "-X",
        "OPTIONS",
        "-D",
        "-",
        "-o",
        "/dev/null",
        "-H",
        "Host: cors.test",
        "-H",
        "Origin: https://app.test",
        "-H",
        "Access-Control-Request-Method: POST",
        &url,
    ]);
    let headers = String::from_utf8(out.stdout).unwrap().to_ascii_lowercase();
    assert!(
        headers.contains("access-control-allow-origin: https://app.test"),
        "{headers}"
    );

    // Canary by header; by weight 0 nobody else gets it.
    for _ in 0..20 {
        assert_eq!(site.pod("shop.test", "/", &[]).as_deref(), Some("main"));
    }
    let always = ["-H", "X-Canary: always"];
    assert_eq!(
        site.pod("shop.test", "/", &always).as_deref(),
        Some("canary")
    );
    // Weight 100: everybody gets it but those who say never.
    gateway
        .config
        .write_atomic("ingress-shop-canary.yaml", &canary_ingress(100));
    wait_for("the canary to take every request", || {
        site.pod("shop.test", "/", &[]).as_deref() == Some("canary")
    });
    for _ in 0..20 {
        assert_eq!(site.pod("shop.test", "/", &[]).as_deref(), Some("canary"));
    }
    let never = ["-H", "X-Canary: never"];
    assert_eq!(site.pod("shop.test", "/", &never).as_deref(), Some("main"));

    // An auth annotation that cannot be enforced: 500, never unprotected;
    // the other Ingresses serve as before.
    assert_eq!(site.get("broken.test", "/", &[]).0, 500);
    assert_eq!(site.pod("plain.test", "/", &[]).as_deref(), Some("main"));
}

#[test]
fn check_reports_invalid_and_conflicting_annotations() {
    let dir = TempDir::new("ingress-annotations-check");
    dir.write("class.yaml", INGRESS_CLASS);
    dir.write("main.yaml", &service("main", 8080));
    dir.write(
        "ingress.yaml",
        &ingress(
            "web",
            "web.test",
            "/",
            "main",
            &[
                "ingress.coxswain-labs.dev/max-body-size: 2m",
                "nginx.ingress.kubernetes.io/proxy-body-size: 1m",
                "nginx.ingress.kubernetes.io/load-balance: fastest",
            ],
        ),
    );
    let out = Command::new(BIN)
        .args(["check", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("Ingress default/web"), "{text}");
    assert!(
        text.contains("nginx.ingress.kubernetes.io/load-balance: \"fastest\" is invalid"),
        "{text}"
    );
    assert!(
        text.contains("ingress.coxswain-labs.dev/max-body-size is used"),
        "{text}"
    );
}
