//! Reload latency benchmark (not a test): how long from writing a route
//! file until the gateway serves it, with 5,000 HTTPRoutes loaded.
//!
//! Run with `scripts/bench-reload.sh` (builds the release binary first), or
//! `COXSWAIN_BIN=target/release/coxswain cargo run --release -p coxswain --example reload_latency`.
//! Prints p50/p99/max for new files and for edits of an existing route, and
//! the gateway's own split (watch, translate, apply) from its logs.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

const ROUTES: usize = 5_000;
const FILES: usize = 50;
const SAMPLES: usize = 100;
const TIMEOUT: Duration = Duration::from_secs(10);

type Body = Empty<bytes::Bytes>;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

async fn bench() -> anyhow::Result<()> {
    let bin = std::env::var("COXSWAIN_BIN").unwrap_or_else(|_| "target/release/coxswain".into());
    let dir = std::env::temp_dir().join(format!("coxswain-reload-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let (http_port, echo_port, admin_port) = (free_port()?, free_port()?, free_port()?);
    write_base(&dir, http_port, echo_port)?;
    let log = dir.with_extension("log");
    let mut gateway = Gateway(
        Command::new(&bin)
            .args(["run", "--bind-address", "127.0.0.1"])
            .arg("--config")
            .arg(&dir)
            .args(["--admin-address", &format!("127.0.0.1:{admin_port}")])
            .args(["--echo", &format!("127.0.0.1:{echo_port}")])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()?,
    );
    let started = Instant::now();
    let gateway_addr: SocketAddr = format!("127.0.0.1:{http_port}").parse()?;
    let mut client = connect_when_serving(gateway_addr, "/r0").await?;
    println!(
        "{ROUTES} routes in {FILES} files: ready in {:?}",
        started.elapsed()
    );

    let mut new_file = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let path = format!("/new-{i}");
        let text = route_yaml(&format!("new-{i}"), &path, echo_port);
        let start = Instant::now();
        std::fs::write(dir.join(format!("new-{i}.yaml")), text)?;
        wait_for_200(&mut client, &path).await?;
        new_file.push(start.elapsed());
    }
    let mut modified = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        // Rewrite one route of a bulk file (atomically, as config tools do).
        let path = format!("/r{i}-v2");
        let file = i % FILES;
        let text = bulk_file(file, echo_port)
            .replace(&format!("value: /r{i}\n"), &format!("value: {path}\n"));
        let start = Instant::now();
        write_atomic(&dir, &format!("routes-{file:02}.yaml"), &text)?;
        wait_for_200(&mut client, &path).await?;
        modified.push(start.elapsed());
        write_atomic(
            &dir,
            &format!("routes-{file:02}.yaml"),
            &bulk_file(file, echo_port),
        )?;
        wait_for_200(&mut client, &format!("/r{i}")).await?;
    }
    report("new route file", &mut new_file);
    report("modified route", &mut modified);
    report_gateway_split(&log);
    drop(gateway.0.kill());
    let _ = gateway.0.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&log);
    Ok(())
}

struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn write_base(dir: &Path, http_port: u16, echo_port: u16) -> std::io::Result<()> {
    let base = format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: coxswain-labs.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: bench
spec:
  gatewayClassName: coxswain
  listeners:
  - name: http
    protocol: HTTP
    port: {http_port}
---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
  - port: {echo_port}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- port: {echo_port}
endpoints:
- addresses: [127.0.0.1]
"
    );
    std::fs::write(dir.join("base.yaml"), base)?;
    for file in 0..FILES {
        std::fs::write(
            dir.join(format!("routes-{file:02}.yaml")),
            bulk_file(file, echo_port),
        )?;
    }
    Ok(())
}

/// Routes `file, file + FILES, file + 2*FILES, ...`.
fn bulk_file(file: usize, echo_port: u16) -> String {
    (file..ROUTES)
        .step_by(FILES)
        .map(|i| route_yaml(&format!("r{i}"), &format!("/r{i}"), echo_port))
        .collect::<Vec<_>>()
        .join("---\n")
}

fn route_yaml(name: &str, path: &str, echo_port: u16) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs:
  - name: bench
  rules:
  - matches:
    - path:
        type: PathPrefix
        value: {path}
    backendRefs:
    - name: echo
      port: {echo_port}
"
    )
}

fn write_atomic(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text)?;
    let path = dir.join(name);
    std::fs::rename(tmp, &path)?;
    Ok(path)
}

async fn connect(address: SocketAddr) -> anyhow::Result<SendRequest<Body>> {
    let stream = tokio::net::TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

async fn connect_when_serving(
    address: SocketAddr,
    path: &str,
) -> anyhow::Result<SendRequest<Body>> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(mut client) = connect(address).await
            && get(&mut client, path).await.ok() == Some(200)
        {
            return Ok(client);
        }
        anyhow::ensure!(Instant::now() < deadline, "gateway never served {path}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn get(client: &mut SendRequest<Body>, path: &str) -> anyhow::Result<u16> {
    client.ready().await?;
    let request = http::Request::get(path)
        .header("host", "bench")
        .body(Empty::new())?;
    let response = client.send_request(request).await?;
    let status = response.status().as_u16();
    response.into_body().collect().await?;
    Ok(status)
}

/// Polls over the one keep-alive connection until `path` answers 200.
async fn wait_for_200(client: &mut SendRequest<Body>, path: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + TIMEOUT;
    while get(client, path).await? != 200 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{path} not served within {TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    Ok(())
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{what:>16}: p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms   (n={})",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0)),
        samples.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Where the time goes, from the gateway's own `config applied` log lines.
fn report_gateway_split(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    for field in ["since_change_ms", "watch_ms", "translate_ms", "apply_ms"] {
        let mut values: Vec<f64> = text
            .lines()
            .filter(|l| l.contains("config applied"))
            .filter_map(|l| {
                let rest = l.split(&format!("{field}=")).nth(1)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .collect();
        if values.is_empty() {
            continue;
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "  gateway {field:>15}: p50 {:>7.2}   p99 {:>7.2}   max {:>7.2}   (n={})",
            at(0.5),
            at(0.99),
            at(1.0),
            values.len()
        );
    }
}
