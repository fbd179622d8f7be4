//! `coxswain migrate` proven by behaviour: the ingress-nginx manifests in
//! examples/migrate/ingress-nginx are served by `coxswain run` as
//! Ingresses, a fixed list of requests is sent with curl and each answer
//! recorded (status, the echo backend that answered and the path it saw,
//! Location, the auth challenge, CORS headers); then the same manifests
//! are migrated, the Gateway API output is served, and the same requests
//! must get the same answers. `coxswain check` must accept every migrated
//! route, and the report must name what Gateway API cannot express.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::pki::{ca, server};
use support::*;

/// Example Services and the placeholder port each listens on there.
const SERVICES: &[(&str, &str)] = &[
    ("web", "3001"),
    ("api", "3002"),
    ("canary", "3003"),
    ("admin", "3004"),
    ("assets", "3005"),
    ("apps", "3006"),
    ("fallback", "3007"),
];

/// Files of the example that are not Ingress objects (served in both runs).
const SHARED_FILES: &[&str] = &["namespace.yaml", "services.yaml", "admin-htpasswd.yaml"];

/// The example with every placeholder port replaced by a live echo's.
struct Example {
    dir: TempDir,
    certs: TempDir,
    _echoes: Vec<Echo>,
}

fn example() -> Example {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/migrate/ingress-nginx");
    let ports: Vec<(&str, &str, u16)> = SERVICES
        .iter()
        .map(|(name, placeholder)| (*name, *placeholder, free_port()))
        .collect();
    let echoes = ports
        .iter()
        .map(|(name, _, port)| echo(name, *port))
        .collect();
    let dir = TempDir::new("migrate-ingress");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let mut text = std::fs::read_to_string(&path).unwrap();
            for (_, placeholder, port) in &ports {
                text = text.replace(placeholder, &port.to_string());
            }
            dir.write(path.file_name().unwrap().to_str().unwrap(), &text);
        }
    }
    let certs = TempDir::new("migrate-pki");
    ca(certs.path(), "ca");
    server(certs.path(), "shop", "ca", "DNS:shop.example.com");
    let read = |f: &str| std::fs::read_to_string(certs.path().join(f)).unwrap();
    dir.write(
        "shop-tls.yaml",
        &format!(
            "apiVersion: v1
kind: Secret
metadata:
  name: shop-tls
  namespace: shop
type: kubernetes.io/tls
stringData:
  tls.crt: |
{}  tls.key: |
{}",
            indent(&read("shop.crt"), 4),
            indent(&read("shop.key"), 4),
        ),
    );
    Example {
        dir,
        certs,
        _echoes: echoes,
    }
}

/// One request of the fixed list.
struct Probe {
    name: &'static str,
    https: bool,
    host: &'static str,
    path: &'static str,
    args: &'static [&'static str],
}

const fn probe(name: &'static str, host: &'static str, path: &'static str) -> Probe {
    Probe {
        name,
        https: false,
        host,
        path,
        args: &[],
    }
}

const PROBES: &[Probe] = &[
    probe("shop root", "shop.example.com", "/"),
    probe("shop prefix", "shop.example.com", "/api/cart"),
    probe("shop exact", "shop.example.com", "/healthz"),
    probe("shop exact is exact", "shop.example.com", "/healthz/deep"),
    probe("no such host", "nobody.example.com", "/x"),
    probe("no host at all", "127.0.0.1", "/"),
    Probe {
        args: &["-H", "X-Canary: always"],
        ..probe("canary by header", "shop.example.com", "/")
    },
    Probe {
        https: true,
        ..probe("shop over TLS", "shop.example.com", "/api/cart")
    },
    Probe {
        https: true,
        args: &["-H", "X-Canary: always"],
        ..probe("canary by header over TLS", "shop.example.com", "/")
    },
    Probe {
        https: true,
        args: &["-H", "X-Canary: no"],
        ..probe("other header value over TLS", "shop.example.com", "/")
    },
    probe("admin without credentials", "admin.example.com", "/"),
    Probe {
        args: &["-u", "admin:wrong"],
        ..probe("admin with a wrong password", "admin.example.com", "/")
    },
    Probe {
        args: &["-u", "admin:demo-password"],
        ..probe("admin with credentials", "admin.example.com", "/")
    },
    probe("back office from outside", "backoffice.example.com", "/"),
    probe("rewritten asset", "cdn.example.com", "/static/app.js"),
    Probe {
        args: &[
            "-X",
            "OPTIONS",
            "-H",
            "Origin: https://shop.example.com",
            "-H",
            "Access-Control-Request-Method: POST",
        ],
        ..probe("CORS preflight", "api.example.com", "/orders")
    },
    Probe {
        args: &["-H", "Origin: https://shop.example.com"],
        ..probe("CORS simple request", "api.example.com", "/orders")
    },
    Probe {
        args: &["--data-binary", "@-"],
        ..probe("upload over the body limit", "api.example.com", "/upload")
    },
    probe("one-label wildcard", "eu.apps.example.com", "/"),
    probe(
        "answer slower than the read timeout",
        "api.example.com",
        "/slow?delay_ms=2500",
    ),
    probe("canary by weight", "beta.example.com", "/"),
    Probe {
        args: &["-H", "Cookie: theme=dark; beta_tester=never"],
        ..probe("canary cookie says never", "beta.example.com", "/")
    },
];

/// What the test compares: everything a client can tell apart.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    /// The echo backend that answered (its `--name`), and the path it saw.
    backend: Option<(String, String)>,
    location: Option<String>,
    challenge: Option<String>,
    allow_origin: Option<String>,
    allow_methods: Option<String>,
}

fn send(probe: &Probe, http: u16, https: u16, ca_file: &Path) -> Answer {
    let mut args: Vec<String> = vec!["-i".into()];
    let url = if probe.https {
        args.extend([
            "--resolve".into(),
            format!("{}:{https}:127.0.0.1", probe.host),
            "--cacert".into(),
            ca_file.display().to_string(),
        ]);
        format!("https://{}:{https}{}", probe.host, probe.path)
    } else {
        args.extend(["-H".into(), format!("Host: {}", probe.host)]);
        format!("http://127.0.0.1:{http}{}", probe.path)
    };
    args.extend(probe.args.iter().map(|a| a.to_string()));
    args.push(url);
    let mut child = Command::new("curl")
        .arg("-s")
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // A 2 KiB body for the upload probe; the others read no stdin.
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(&[b'x'; 2048]);
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let backend = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            Some((
                v["pod"].as_str()?.to_string(),
                v["path"].as_str()?.to_string(),
            ))
        });
    Answer {
        status,
        backend,
        location: header("location"),
        challenge: header("www-authenticate"),
        allow_origin: header("access-control-allow-origin"),
        allow_methods: header("access-control-allow-methods"),
    }
}

fn answers(http: u16, https: u16, ca_file: &Path) -> Vec<Answer> {
    PROBES
        .iter()
        .map(|p| send(p, http, https, ca_file))
        .collect()
}

fn served_by(answer: &Answer, pod: &str) -> bool {
    answer.status == 200 && answer.backend.as_ref().is_some_and(|(p, _)| p == pod)
}

fn run_migrate(input: &Path, output: &Path, http: u16, https: u16) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("migrate")
        .arg(input)
        .arg("--output")
        .arg(output)
        .args(["--http-port", &http.to_string()])
        .args(["--https-port", &https.to_string()])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn migrated_gateway_answers_as_the_ingresses_did() {
    let example = example();
    let ca_file = example.certs.path().join("ca.crt");
    let (http, https) = (free_port(), free_port());

    // 1. The Ingresses, served as ingress-nginx's class.
    let ingress_run = TempDir::new("migrate-ingress-run");
    for entry in std::fs::read_dir(example.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, ingress_run.path().join(path.file_name().unwrap())).unwrap();
    }
    let before = {
        let gateway = Gateway::start_with(
            ingress_run,
            http,
            free_port(),
            &[
                "--controller-name",
                "k8s.io/ingress-nginx",
                "--ingress-http-port",
                &http.to_string(),
                "--ingress-https-port",
                &https.to_string(),
            ],
        );
        wait_for("the Ingresses to be served", || {
            served_by(&send(&PROBES[4], http, https, &ca_file), "fallback")
        });
        let before = answers(http, https, &ca_file);
        drop(gateway);
        before
    };
    assert!(served_by(&before[4], "fallback"), "{:?}", before[4]);
    assert!(served_by(&before[7], "api"), "{:?}", before[7]);

    // 2. The migration: a report naming what Gateway API cannot express.
    let migrated = TempDir::new("migrate-output");
    let (code, report) = run_migrate(example.dir.path(), migrated.path(), http, https);
    assert_eq!(code, 1, "the wildcard cannot map exactly: {report}");
    assert!(
        report.contains("Ingress shop/apps: 1 thing(s) not mapped")
            && report.contains(
                "rules[0].host: Ingress wildcard \"*.apps.example.com\" matches exactly one label"
            ),
        "{report}"
    );

    assert!(
        report.contains("Service api is also a backend of Ingress shop/shop"),
        "{report}"
    );

    // 3. The Gateway API objects, with the same Services and Secrets.
    let gateway_run = TempDir::new("migrate-gateway-run");
    for file in SHARED_FILES.iter().chain(&["shop-tls.yaml"]) {
        std::fs::copy(example.dir.path().join(file), gateway_run.path().join(file)).unwrap();
    }
    for entry in std::fs::read_dir(migrated.path()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, gateway_run.path().join(path.file_name().unwrap())).unwrap();
    }
    let check = Command::new(BIN)
        .arg("check")
        .arg(gateway_run.path())
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{summary}");
    let routes: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("HTTPRoute "))
        .collect();
    assert_eq!(routes.len(), 9, "{summary}");
    for line in routes {
        assert!(
            line.contains("Accepted=True") && line.contains("ResolvedRefs=True"),
            "{line}"
        );
    }

    let gateway = Gateway::start_with(gateway_run, http, free_port(), &[]);
    wait_for("the migrated routes to be served", || {
        served_by(&send(&PROBES[4], http, https, &ca_file), "fallback")
    });
    let after = answers(http, https, &ca_file);
    // The annotations are enforced (independently of the comparison).
    let by_name = |name: &str| {
        let i = PROBES.iter().position(|p| p.name == name).unwrap();
        &after[i]
    };
    let location = format!("https://shop.example.com:{https}/api/cart");
    for (name, status, backend) in [
        ("shop prefix", 308, None),
        ("shop over TLS", 200, Some(("api", "/api/cart"))),
        ("canary by header over TLS", 200, Some(("canary", "/"))),
        ("other header value over TLS", 200, Some(("web", "/"))),
        ("no such host", 200, Some(("fallback", "/x"))),
        ("admin without credentials", 401, None),
        ("admin with a wrong password", 401, None),
        ("admin with credentials", 200, Some(("admin", "/"))),
        ("back office from outside", 403, None),
        ("rewritten asset", 200, Some(("assets", "/app.js"))),
        ("CORS preflight", 204, None),
        ("upload over the body limit", 413, None),
        ("answer slower than the read timeout", 504, None),
        ("one-label wildcard", 200, Some(("apps", "/"))),
        ("canary by weight", 200, Some(("canary", "/"))),
        ("canary cookie says never", 200, Some(("web", "/"))),
    ] {
        let got = by_name(name);
        let backend = backend.map(|(p, path): (&str, &str)| (p.to_string(), path.to_string()));
        assert_eq!(
            (got.status, &got.backend),
            (status, &backend),
            "{name}: {got:?}"
        );
    }
    assert_eq!(
        by_name("shop prefix").location.as_deref(),
        Some(location.as_str())
    );
    assert!(by_name("admin without credentials").challenge.is_some());
    assert_eq!(
        by_name("CORS preflight").allow_origin.as_deref(),
        Some("https://shop.example.com")
    );

    let differences: Vec<String> = PROBES
        .iter()
        .zip(&before)
        .zip(&after)
        .filter(|((_, before), after)| before != after)
        .map(|((probe, before), after)| {
            format!(
                "{}:\n  Ingress:  {before:?}\n  migrated: {after:?}",
                probe.name
            )
        })
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n"));

    // What the report says differs does differ: a deeper name reaches the
    // wildcard route, where the Ingress sent it to the default backend.
    let deep = probe("two-label name", "eu.west.apps.example.com", "/");
    assert!(served_by(&send(&deep, http, https, &ca_file), "apps"));
    drop(gateway);
}
