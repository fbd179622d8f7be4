//! Drives the real `coxswain` binary: temp config dirs, reserved loopback
//! ports, readiness with a deadline, curl as the client, kill on drop.
#![allow(dead_code)] // not every helper is used by a test yet

pub mod jaeger;
mod named_echo;
pub mod pki;
// One port allocator and one redis-server helper for the proxy's tests and
// these.
#[path = "../../../../proxy/tests/integration/common/ports.rs"]
mod ports;
#[path = "../../../../proxy/tests/integration/common/redis.rs"]
pub mod redis;
pub use named_echo::{Echo, echo};
pub use ports::free_port;
mod tools;
mod yaml;

pub use tools::build_tool;
pub use yaml::{INGRESS_CLASS, indent, loopback_service};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_coxswain");

/// The GatewayClass Coxswain serves, as the first document of a config.
pub const GATEWAY_CLASS: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: coxswain-labs.dev/gateway-controller
---
";

/// How long any condition may take before a test fails.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A fresh directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("coxswain-e2e-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes via a hidden temp file and a rename, as careful tools do.
    pub fn write_atomic(&self, name: &str, text: &str) -> PathBuf {
        let tmp = self.0.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).unwrap();
        let path = self.0.join(name);
        std::fs::rename(&tmp, &path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `condition` until it holds or [`DEADLINE`] passes.
pub fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        poll_pause();
    }
}

/// The gap between two polls of a condition. Only ever called from
/// deadline-bounded waits: it paces polling, it does not synchronise.
#[allow(clippy::disallowed_methods)]
fn poll_pause() {
    std::thread::sleep(Duration::from_millis(10));
}

/// The quickstart example with its ports swapped for reserved ones.
pub fn quickstart_config(dir: &TempDir, http_port: u16, echo_port: u16) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    for entry in std::fs::read_dir(example).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            // Whole lines: an HTTP port of 30000 must not read as a second
            // "port: 3000" to replace.
            let text = text
                .replace("port: 8080\n", &format!("port: {http_port}\n"))
                .replace("port: 3000\n", &format!("port: {echo_port}\n"));
            dir.write(path.file_name().unwrap().to_str().unwrap(), &text);
        }
    }
}

/// A running `coxswain run` serving the quickstart config.
pub struct Gateway {
    child: Child,
    pub config: TempDir,
    logs: TempDir,
    pub http_port: u16,
    pub echo_port: u16,
    pub admin: SocketAddr,
}

impl Gateway {
    pub fn quickstart(tag: &str) -> Self {
        let config = TempDir::new(tag);
        let (http_port, echo_port) = (free_port(), free_port());
        quickstart_config(&config, http_port, echo_port);
        Gateway::start(config, http_port, echo_port)
    }

    pub fn start(config: TempDir, http_port: u16, echo_port: u16) -> Self {
        Gateway::start_with(config, http_port, echo_port, &[])
    }

    /// [`Gateway::start`] with extra `coxswain run` flags (`--drain-timeout`
    /// among them replaces the default 10s).
    pub fn start_with(config: TempDir, http_port: u16, echo_port: u16, args: &[&str]) -> Self {
        let gateway = Gateway::spawn(config, http_port, echo_port, args);
        wait_for("/readyz", || {
            gateway
                .admin_get("/readyz")
                .is_some_and(|(code, _)| code == 200)
        });
        gateway
    }

    /// Starts the process and waits only for its admin endpoint, not for
    /// readiness (which a config that cannot be served never reaches).
    pub fn start_unready(config: TempDir, http_port: u16, echo_port: u16) -> Self {
        let gateway = Gateway::spawn(config, http_port, echo_port, &[]);
        wait_for("the admin endpoint", || {
            gateway.admin_get("/healthz").is_some()
        });
        gateway
    }

    fn spawn(config: TempDir, http_port: u16, echo_port: u16, args: &[&str]) -> Self {
        let logs = TempDir::new("logs");
        let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let stderr = std::fs::File::create(logs.path().join("stderr")).unwrap();
        let drain: &[&str] = if args.contains(&"--drain-timeout") {
            &[]
        } else {
            &["--drain-timeout", "10s"]
        };
        let child = Command::new(BIN)
            .arg("run")
            .arg("--config")
            .arg(config.path())
            .args(["--bind-address", "127.0.0.1"])
            .args(["--admin-address", &admin.to_string()])
            .args(["--echo", &format!("127.0.0.1:{echo_port}")])
            .args(drain)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap();
        Gateway {
            child,
            config,
            logs,
            http_port,
            echo_port,
            admin,
        }
    }

    /// The `/status` entry of one object.
    pub fn status_of(&self, kind: &str, name: &str) -> Option<serde_json::Value> {
        let (_, body) = self.admin_get("/status")?;
        let all: serde_json::Value = serde_json::from_str(&body).ok()?;
        all.as_array()?
            .iter()
            .find(|s| s["kind"] == kind && s["name"] == name)
            .map(|s| s["status"].clone())
    }

    /// `"<status>/<reason>"` of the `Accepted` condition in the status of
    /// the `kind` resource `name`.
    pub fn accepted(&self, kind: &str, name: &str) -> Option<String> {
        condition(&self.status_of(kind, name)?["conditions"], "Accepted")
    }

    /// Waits until [`Gateway::accepted`] is `want`. The proxy serves a
    /// new config before `/status` has it (status needs the bind results),
    /// so a test that saw behaviour change waits for the status too.
    pub fn wait_accepted(&self, kind: &str, name: &str, want: &str) {
        wait_for(&format!("{kind} {name} to be Accepted {want}"), || {
            self.accepted(kind, name).as_deref() == Some(want)
        });
    }

    /// The same for its first `status.ancestors` entry (a policy's).
    pub fn ancestor_accepted(&self, kind: &str, name: &str) -> Option<String> {
        condition(
            &self.status_of(kind, name)?["ancestors"][0]["conditions"],
            "Accepted",
        )
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http_port)
    }

    /// GET on the admin port (plain HTTP/1.0-style, connection closed).
    pub fn admin_get(&self, path: &str) -> Option<(u16, String)> {
        raw_get(self.admin, path)
    }

    /// The value of one series on `/metrics`: its name with its labels as
    /// rendered (`name` alone when it has none).
    pub fn metric(&self, series: &str) -> Option<u64> {
        let (code, body) = self.admin_get("/metrics")?;
        if code != 200 {
            return None;
        }
        body.lines().find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse()
                .ok()
        })
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.logs.path().join("stderr")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits (with the deadline) for the process to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < DEADLINE, "gateway did not exit");
            poll_pause();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Minimal HTTP/1.1 GET with `Connection: close`: (status, body).
pub fn raw_get(address: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())?;
    Some((code, body))
}

/// Runs curl; `-s` is always on.
pub fn curl(args: &[&str]) -> Output {
    Command::new("curl").arg("-s").args(args).output().unwrap()
}

/// Status code and body of one curl GET.
pub fn curl_get(extra: &[&str], url: &str) -> (u16, String) {
    let mut args = extra.to_vec();
    args.extend(["-w", "\n%{http_code}", url]);
    let out = String::from_utf8(curl(&args).stdout).unwrap();
    let (body, code) = out.rsplit_once('\n').unwrap();
    (code.parse().unwrap_or(0), body.to_string())
}

/// Parses an echo response.
pub fn echo_json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not echo JSON ({e}): {body}"))
}

/// An HTTPRoute on the quickstart Gateway that tags requests with `x-route`.
pub fn tagged_route(name: &str, path: &str, tag: &str, echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path:
        type: PathPrefix
        value: {path}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set:
        - name: x-route
          value: {tag}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

/// The `X-Route` header the echo backend saw, if any.
pub fn route_tag(echo: &serde_json::Value) -> Option<String> {
    echo["headers"]["X-Route"][0].as_str().map(str::to_string)
}

/// `"<status>/<reason>"` of the condition of `type_` in a conditions list.
pub fn condition(conditions: &serde_json::Value, type_: &str) -> Option<String> {
    let c = conditions.as_array()?.iter().find(|c| c["type"] == type_)?;
    Some(format!(
        "{}/{}",
        c["status"].as_str()?,
        c["reason"].as_str()?
    ))
}
