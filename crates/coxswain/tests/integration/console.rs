//! The read-only console and the shipped dashboards against the real
//! binary. `coxswain run` serves the quickstart with a circuit breaker on
//! the echo Service and a second, dead pod behind it; curl makes traffic.
//! Then: the console's JSON views carry the Gateway, routes, policy,
//! endpoints and live rates; every series the Grafana dashboard and the
//! Prometheus alerts name is on `/metrics` (the controller's from a real
//! `coxswain controller` pointed at an API server that is not there); and
//! headless Chromium renders the page with that content.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use support::*;

const POLICY: &str = "apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainBackendPolicy
metadata:
  name: echo-breaker
spec:
  targetRefs:
  - group: \"\"
    kind: Service
    name: echo
  timeouts:
    connect: 500ms
  circuitBreaker:
    threshold: 50
    minRequests: 2
    window: 1m
    openDuration: 1m
";

/// A second EndpointSlice of the echo Service: a pod nothing listens on.
fn dead_pod(port: u16) -> String {
    format!(
        "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo-dead
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- name: http
  port: {port}
endpoints:
- addresses: [\"127.0.0.1\"]
  conditions:
    ready: true
"
    )
}

/// A Gateway with one TCP listener and a TCPRoute to the echo Service.
fn tcp_gateway(port: u16, echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: raw
spec:
  gatewayClassName: coxswain
  listeners:
  - name: tcp
    protocol: TCP
    port: {port}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata:
  name: raw
spec:
  parentRefs:
  - name: raw
  rules:
  - backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

/// The quickstart, a breaker that opens on the dead pod, and traffic on
/// both quickstart routes; a TCP Gateway with one connection through it.
struct Scene {
    gateway: Gateway,
    dead_port: u16,
    tcp_port: u16,
}

impl Scene {
    fn start(tag: &str) -> Self {
        let config = TempDir::new(tag);
        let (http_port, echo_port, dead_port) = (free_port(), free_port(), free_port());
        let tcp_port = free_port();
        quickstart_config(&config, http_port, echo_port);
        config.write("dead.yaml", &dead_pod(dead_port));
        config.write("tcp.yaml", &tcp_gateway(tcp_port, echo_port));
        config.write("policy.yaml", POLICY);
        let gateway = Gateway::start(config, http_port, echo_port);
        wait_for("the policy to be Accepted", || {
            gateway.ancestor_accepted("CoxswainBackendPolicy", "echo-breaker")
                == Some("True/Accepted".to_string())
        });
        for _ in 0..6 {
            assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
        }
        for _ in 0..3 {
            let (code, _) = curl_get(&["-H", "x-api-version: v1"], &gateway.url("/api/x"));
            assert_eq!(code, 200);
        }
        // One connection spliced to the echo server (which speaks HTTP).
        let over_tcp = format!("http://127.0.0.1:{tcp_port}/over-tcp");
        wait_for("the TCP listener", || {
            std::net::TcpStream::connect(("127.0.0.1", tcp_port)).is_ok()
        });
        assert_eq!(curl_get(&[], &over_tcp).0, 200);
        Scene {
            gateway,
            dead_port,
            tcp_port,
        }
    }

    fn api(&self, view: &str) -> Value {
        let (code, body) = self
            .gateway
            .admin_get(&format!("/api/v1/{view}"))
            .expect("the admin answers");
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{view}: {e}: {body}"))
    }

    fn echo_cluster(&self) -> String {
        format!("default/echo:{}", self.gateway.echo_port)
    }
}

fn find<'a>(items: &'a Value, key: &str, value: &str) -> &'a Value {
    items
        .as_array()
        .and_then(|all| all.iter().find(|i| i[key] == value))
        .unwrap_or_else(|| panic!("no {key}={value} in {items:#}"))
}

fn has_condition(conditions: &Value, type_: &str, status: &str, reason: &str) -> bool {
    conditions.as_array().is_some_and(|all| {
        all.iter()
            .any(|c| c["type"] == type_ && c["status"] == status && c["reason"] == reason)
    })
}

#[test]
fn console_api_joins_status_config_and_metrics() {
    let scene = Scene::start("console-api");

    let gateways = scene.api("gateways");
    let quickstart = find(&gateways, "name", "quickstart");
    assert!(
        has_condition(
            &quickstart["conditions"],
            "Programmed",
            "True",
            "Programmed"
        ),
        "{quickstart:#}"
    );
    let listener = find(&quickstart["listeners"], "name", "http");
    assert_eq!(listener["attachedRoutes"], 2, "{listener:#}");
    assert!(has_condition(
        &listener["conditions"],
        "Accepted",
        "True",
        "Accepted"
    ));
    let serving = &listener["serving"][0];
    assert_eq!(serving["protocol"], "HTTP");
    assert_eq!(
        serving["address"],
        format!("127.0.0.1:{}", scene.gateway.http_port)
    );

    let routes = scene.api("routes");
    let window = routes["windowSeconds"].as_f64().unwrap();
    assert!(window > 0.0 && window <= 65.0, "{window}");
    let echo = find(&routes["routes"], "name", "echo");
    assert_eq!(echo["kind"], "HTTPRoute");
    assert_eq!(echo["parents"][0]["parentRef"]["name"], "quickstart");
    assert!(has_condition(
        &echo["parents"][0]["conditions"],
        "ResolvedRefs",
        "True",
        "ResolvedRefs"
    ));
    let rule = &echo["rules"][0];
    assert_eq!(rule["label"], "default/echo/0");
    assert_eq!(rule["backends"][0]["cluster"], scene.echo_cluster());
    let traffic = &rule["traffic"];
    assert_eq!(traffic["requests"], 6, "{traffic:#}");
    assert_eq!(traffic["errorRatio"], 0.0);
    assert!(traffic["requestsPerSecond"].as_f64().unwrap() > 0.0);
    let (p50, p99) = (
        traffic["p50Seconds"].as_f64().unwrap(),
        traffic["p99Seconds"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= 10.0, "{traffic:#}");
    let api = find(&routes["routes"], "name", "api");
    assert_eq!(api["rules"][0]["traffic"]["requests"], 3, "{api:#}");

    // The TCPRoute's rule: connections, not requests. The bytes are
    // counted as the splice relays them; the connection may still be
    // closing, so wait for both directions.
    let mut raw = Value::Null;
    wait_for("the TCP connection's bytes on the console", || {
        raw = find(&scene.api("routes")["routes"], "kind", "TCPRoute").clone();
        let t = &raw["rules"][0]["traffic"];
        t["bytesInPerSecond"].as_f64() > Some(0.0) && t["bytesOutPerSecond"].as_f64() > Some(0.0)
    });
    assert_eq!(raw["name"], "raw");
    let traffic = &raw["rules"][0]["traffic"];
    // The readiness probe's connection and curl's.
    assert_eq!(traffic["connections"], 2, "{raw:#}");
    assert_eq!(traffic["connectErrors"], 0, "{raw:#}");
    assert!(traffic["connectionsPerSecond"].as_f64().unwrap() > 0.0);
    assert!(traffic.get("requests").is_none(), "{raw:#}");
    // A second connection shows while it is open.
    let held = std::net::TcpStream::connect(("127.0.0.1", scene.tcp_port)).unwrap();
    wait_for("the open connection on the console", || {
        let raw = find(&scene.api("routes")["routes"], "kind", "TCPRoute").clone();
        raw["rules"][0]["traffic"]["active"] == 1
    });
    drop(held);

    let policies = scene.api("policies");
    let policy = find(&policies, "name", "echo-breaker");
    assert_eq!(policy["kind"], "CoxswainBackendPolicy");
    assert_eq!(policy["ancestors"][0]["ancestorRef"]["name"], "echo");
    assert!(has_condition(
        &policy["ancestors"][0]["conditions"],
        "Accepted",
        "True",
        "Accepted"
    ));

    let backends = scene.api("backends");
    let cluster = find(&backends, "name", &scene.echo_cluster());
    assert_eq!(cluster["policy"]["name"], "default/echo-breaker");
    assert_eq!(cluster["policy"]["circuitBreaker"]["threshold_percent"], 50);
    let dead = find(
        &cluster["endpoints"],
        "address",
        &format!("127.0.0.1:{}", scene.dead_port),
    );
    assert_eq!(dead["breaker"]["state"], "open", "{cluster:#}");
    let live = find(
        &cluster["endpoints"],
        "address",
        &format!("127.0.0.1:{}", scene.gateway.echo_port),
    );
    assert_eq!(live["breaker"]["state"], "closed");
    assert_eq!(live["ready"], true);

    // Read-only: anything but GET/HEAD is refused, the page is served with
    // a policy that forbids every other origin.
    let post = curl(&[
        "-X",
        "POST",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("http://{}/api/v1/routes", scene.gateway.admin),
    ]);
    assert_eq!(String::from_utf8_lossy(&post.stdout), "405");
    let page = curl(&[
        "-D",
        "-",
        &format!("http://{}/console/", scene.gateway.admin),
    ]);
    let page = String::from_utf8_lossy(&page.stdout).to_ascii_lowercase();
    assert!(
        page.contains("content-security-policy: default-src 'none'"),
        "{page}"
    );
    assert!(page.contains("<script src=\"console.js\""));
    let root = curl(&[
        "-D",
        "-",
        "-o",
        "/dev/null",
        &format!("http://{}/", scene.gateway.admin),
    ]);
    let root = String::from_utf8_lossy(&root.stdout).to_ascii_lowercase();
    assert!(
        root.starts_with("http/1.1 308") && root.contains("location: /console/"),
        "{root}"
    );
}

/// Metric names in a PromQL expression: identifiers left after dropping
/// strings, label matchers, range selectors, grouping label lists,
/// function calls and keywords.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Operators and aggregations: reserved words, never metric names.
    const KEYWORDS: [&str; 17] = [
        "and", "or", "unless", "bool", "offset", "by", "without", "on", "sum", "min", "max", "avg",
        "count", "group", "stddev", "stdvar", "quantile",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let mut grouping = false; // inside by (...), without (...), on (...)
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while i < chars.len() && chars[i] != close {
                    i += 1;
                }
                i += 1;
            }
            // A number or a duration (`5m`): not a name.
            c if c.is_ascii_digit() || c == '.' => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            ')' => {
                grouping = false;
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next].is_whitespace() {
                    next += 1;
                }
                let call = chars.get(next) == Some(&'(');
                if matches!(
                    word.as_str(),
                    "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                ) {
                    grouping = call;
                } else if !call && !grouping && !KEYWORDS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

#[test]
fn promql_tokenizer_finds_only_metric_names() {
    let names = metric_names(
        "histogram_quantile(0.99, sum by (route, le) (rate(a_bucket{route=~\"x|y\", s!='5'}[5m]))) > 1 and on(route) b_total offset 5m or vector(0) * 1e3 + min(c:rule)",
    );
    assert_eq!(
        names,
        BTreeSet::from([
            "a_bucket".to_string(),
            "b_total".to_string(),
            "c:rule".to_string()
        ])
    );
}

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// Every PromQL expression of the dashboard: panel targets and the
/// metric of `label_values(metric, label)` variables.
fn dashboard_exprs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr", Value::String(expr)) => out.push(expr.clone()),
                    ("query" | "definition", Value::String(q))
                        if q.starts_with("label_values(") =>
                    {
                        let inner = &q["label_values(".len()..];
                        out.push(inner.split(',').next().unwrap().to_string());
                    }
                    _ => dashboard_exprs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| dashboard_exprs(v, out)),
        _ => {}
    }
}

fn alert_exprs() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo_file("deploy/prometheus/coxswain-alerts.yaml")).unwrap();
    let rules: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let mut exprs = Vec::new();
    for group in rules["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            assert!(
                rule["alert"].as_str().is_some(),
                "every rule alerts: {rule:?}"
            );
            exprs.push(rule["expr"].as_str().expect("an expr").to_string());
        }
    }
    exprs
}

/// Names with at least one sample (not just a `# TYPE` line) in a scrape.
fn exported(scrape: &str) -> BTreeSet<String> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// `coxswain controller` against an API server address nothing listens
/// on: its admin and metrics come up all the same.
struct Controller {
    child: Child,
    admin: std::net::SocketAddr,
    _dir: TempDir,
}

impl Controller {
    fn start() -> Self {
        let dir = TempDir::new("console-controller");
        let kubeconfig = dir.write(
            "kubeconfig",
            &format!(
                "apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: http://127.0.0.1:{}
users:
- name: nobody
  user: {{}}
contexts:
- name: nowhere
  context: {{cluster: nowhere, user: nobody, namespace: default}}
current-context: nowhere
",
                free_port()
            ),
        );
        let admin: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new(BIN)
            .args(["controller", "--admin-address", &admin.to_string()])
            .args([
                "--bind-address",
                "127.0.0.1",
                "--leader-lease-namespace",
                "default",
            ])
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let controller = Controller {
            child,
            admin,
            _dir: dir,
        };
        wait_for("the controller's admin", || {
            raw_get(controller.admin, "/healthz").is_some()
        });
        controller
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_series_of_the_dashboard_and_alerts_is_exported() {
    let scene = Scene::start("console-dashboards");
    let (_, proxy_scrape) = scene.gateway.admin_get("/metrics").unwrap();
    let controller = Controller::start();
    let (_, controller_scrape) = raw_get(controller.admin, "/metrics").unwrap();
    let (proxy, controller) = (exported(&proxy_scrape), exported(&controller_scrape));

    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_file("deploy/grafana/coxswain-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut exprs = Vec::new();
    dashboard_exprs(&dashboard, &mut exprs);
    let panels = exprs.len();
    exprs.extend(alert_exprs());
    assert!(
        panels >= 20 && exprs.len() > panels,
        "{panels} dashboard, {} in all",
        exprs.len()
    );

    let mut used = BTreeSet::new();
    for expr in &exprs {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "no metric in {expr}");
        used.extend(names);
    }
    let missing: Vec<&String> = used
        .iter()
        .filter(|name| {
            // A histogram's base name stands for its `_bucket` series.
            let found = |set: &BTreeSet<String>| {
                set.contains(*name) || set.contains(&format!("{name}_bucket"))
            };
            if name.starts_with("coxswain_controller_") {
                !found(&controller)
            } else {
                !found(&proxy)
            }
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not exported: {missing:?}\n{proxy_scrape}"
    );
    // The controller's series are really used, and so are the breaker's.
    assert!(used.contains("coxswain_controller_leader"));
    assert!(used.contains("coxswain_proxy_circuit_breaker_state"));
}

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Headless Chromium with everything that would reach beyond localhost off.
fn headless(binary: &Path, profile: &TempDir, args: &[&str]) -> std::process::Output {
    Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--virtual-time-budget=8000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn console_renders_in_headless_chromium() {
    let Some(binary) = chromium() else {
        // CI sets this, so a machine without the browser fails, not passes.
        assert!(
            std::env::var_os("COXSWAIN_REQUIRE_CHROMIUM").is_none(),
            "COXSWAIN_REQUIRE_CHROMIUM is set but /usr/bin/chromium is missing"
        );
        println!(
            "SKIPPED console_renders_in_headless_chromium: no chromium (apt-get install chromium)"
        );
        return;
    };
    let scene = Scene::start("console-browser");
    let url = format!("http://{}/console/", scene.gateway.admin);
    let profile = TempDir::new("chromium-profile");
    let out = headless(&binary, &profile, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for text in [
        "default/quickstart",
        "Programmed=True (Programmed)",
        "HTTPRoute",
        "default/echo",
        "default/api",
        "ResolvedRefs=True (ResolvedRefs)",
        "CoxswainBackendPolicy",
        "default/echo-breaker",
        &scene.echo_cluster(),
        "breaker open",
        "breaker closed",
        "default/echo/0",
        "traffic over the last",
        "TCPRoute",
        "default/raw/0",
        "conn/s",
    ] {
        assert!(dom.contains(text), "{text:?} not rendered:\n{dom}");
    }
    assert!(!dom.contains("Cannot load"), "{dom}");

    let shots = TempDir::new("console-shot");
    let png = shots.path().join("console.png");
    let out = headless(
        &binary,
        &profile,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,800",
            &url,
        ],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{} bytes",
        bytes.len()
    );
    // `CONSOLE_SCREENSHOT=docs/console.png` refreshes the one in the docs.
    if let Ok(target) = std::env::var("CONSOLE_SCREENSHOT") {
        std::fs::copy(&png, repo_file(&target)).unwrap();
    }
}
