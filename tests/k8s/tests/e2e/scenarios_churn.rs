//! Nothing is lost while the cluster moves under load: echo pods scaled
//! and deleted, and an EndpointSlice rewritten about 100 times a second
//! (which must not recompile a single route).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure};
use coxswain_k8s_tests::poll;
use coxswain_k8s_tests::procs::Background;
use serde_json::{Value, json};

use crate::fixtures::{CAP, NS, admin_metric, ensure_demo, wait_status};
use crate::load::{Load, Tally};
use crate::scenarios_traffic::{ready_echo_pods, ready_endpoints};
use crate::setup::Env;

const CLIENTS: usize = 4;

fn scale(env: &Env, replicas: usize) -> anyhow::Result<()> {
    env.admin.run(&[
        "-n",
        NS,
        "scale",
        "deployment/echo",
        &format!("--replicas={replicas}"),
    ])?;
    Ok(())
}

/// Until exactly `n` echo pods are Ready and the EndpointSlice lists just them.
fn settle(env: &Env, n: usize) -> anyhow::Result<()> {
    poll::until(
        &format!("{n} echo pods Ready and in the EndpointSlice"),
        CAP,
        || {
            let pods = ready_echo_pods(env)?;
            Ok((pods.len() == n && ready_endpoints(env)? == pods).then_some(()))
        },
    )
}

fn delete_pods(env: &Env, count: usize) -> anyhow::Result<Vec<String>> {
    let victims: Vec<String> = ready_echo_pods(env)?.into_iter().take(count).collect();
    for pod in &victims {
        env.admin
            .run(&["-n", NS, "delete", "pod", pod, "--wait=false"])?;
    }
    Ok(victims)
}

fn report(what: &str, tally: &Tally) -> anyhow::Result<()> {
    println!(
        "    {what}: {} requests in {:.1}s ({:.0}/s), {} failed",
        tally.sent,
        tally.seconds,
        tally.sent as f64 / tally.seconds.max(0.001),
        tally.failed
    );
    ensure!(
        tally.failed == 0,
        "{} of {} requests failed: {:?}",
        tally.failed,
        tally.sent,
        tally.reasons
    );
    Ok(())
}

/// Scale 2 -> 4, delete two pods, scale 4 -> 2, delete one: every request
/// on the way answers 200.
pub fn pod_churn_under_load_loses_nothing(env: &mut Env) -> anyhow::Result<()> {
    let address = ensure_demo(env)?;
    settle(env, 2)?;
    let load = Load::start(&env.http, address, "/", CLIENTS);
    poll::until("the load under way", CAP, || {
        Ok((load.sent() > 50).then_some(()))
    })?;

    scale(env, 4)?;
    settle(env, 4)?;
    let deleted = delete_pods(env, 2)?;
    poll::until("deleted pods replaced", CAP, || {
        let pods = ready_echo_pods(env)?;
        Ok((pods.len() == 4 && deleted.iter().all(|d| !pods.contains(d))).then_some(()))
    })?;
    settle(env, 4)?;
    scale(env, 2)?;
    settle(env, 2)?;
    let deleted = delete_pods(env, 1)?;
    poll::until("the deleted pod replaced", CAP, || {
        let pods = ready_echo_pods(env)?;
        Ok((pods.len() == 2 && !pods.contains(&deleted[0])).then_some(()))
    })?;
    settle(env, 2)?;

    report(
        "scale 2->4, 2 pods deleted, 4->2, 1 pod deleted",
        &load.finish(),
    )
}

/// A local, plain-HTTP way to the API server (`kubectl proxy`), for
/// writes faster than a kubectl process each.
struct ApiProxy {
    _process: Background,
    address: SocketAddr,
}

impl ApiProxy {
    fn start(env: &Env) -> anyhow::Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = Command::new(&env.admin.bin);
        command
            .env("KUBECONFIG", &env.admin.kubeconfig)
            .args(["proxy", "--address", "127.0.0.1"])
            .arg(format!("--port={port}"));
        let mut process = Background::spawn(
            "kubectl-proxy",
            command,
            &env.cluster.run_dir.join("kubectl-proxy.log"),
            Duration::from_secs(5),
        )?;
        let address: SocketAddr = format!("127.0.0.1:{port}").parse()?;
        poll::until("kubectl proxy listening", CAP, || {
            process.check_alive()?;
            Ok(TcpStream::connect(address).is_ok().then_some(()))
        })?;
        Ok(ApiProxy {
            _process: process,
            address,
        })
    }

    /// A JSON merge patch; returns the HTTP status.
    fn merge_patch(&self, path: &str, body: &Value) -> anyhow::Result<u16> {
        let body = body.to_string();
        let mut stream = TcpStream::connect(self.address)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            stream,
            "PATCH {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/merge-patch+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            body.len()
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let text = String::from_utf8_lossy(&answer);
        text.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| anyhow!("no status line in {text:?}"))
    }
}

/// The addresses of the echo pods in its EndpointSlice.
fn echo_addresses(env: &Env) -> anyhow::Result<Vec<String>> {
    let slices = env.admin.get_json(&[
        "-n",
        NS,
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=echo",
    ])?;
    let mut addresses: Vec<String> = slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["conditions"]["ready"].as_bool() == Some(true))
        .filter_map(|e| e["addresses"][0].as_str().map(str::to_string))
        .collect();
    addresses.sort();
    Ok(addresses)
}

fn endpoints(addresses: &[String]) -> Value {
    Value::Array(
        addresses
            .iter()
            .map(|a| json!({"addresses": [a], "conditions": {"ready": true}}))
            .collect(),
    )
}

fn churn_manifests(addresses: &[String]) -> String {
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "churn-manual",
            "namespace": NS,
            "labels": {
                "kubernetes.io/service-name": "churn",
                "endpointslice.kubernetes.io/managed-by": "e2e.coxswain-labs.dev",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": "", "port": 3000, "protocol": "TCP"}],
        "endpoints": endpoints(addresses),
    });
    format!(
        r#"apiVersion: v1
kind: Service
metadata:
  name: churn
  namespace: {NS}
spec:
  ports:
    - port: 80
      targetPort: 3000
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: churn
  namespace: {NS}
spec:
  parentRefs:
    - name: demo
  rules:
    - matches:
        - path: {{type: PathPrefix, value: /churn}}
      backendRefs:
        - {{name: churn, port: 80}}
---
{slice}
"#
    )
}

/// About 100 EndpointSlice rewrites a second for a few seconds, the
/// endpoint set alternating between one echo pod and both, under load:
/// no request fails and no route is compiled again (not even by the
/// status write-backs of the new route and the Gateway, which come back
/// through the watch while the churn runs).
pub fn endpoint_churn_recompiles_nothing(env: &mut Env) -> anyhow::Result<()> {
    const RATE: u32 = 100;
    const UPDATES: u32 = 500;
    let address = ensure_demo(env)?;
    settle(env, 2)?;
    let both = echo_addresses(env)?;
    ensure!(both.len() == 2, "echo endpoints {both:?}");
    env.admin.apply(&churn_manifests(&both))?;
    wait_status(env, "/churn", 200)?;
    let api = ApiProxy::start(env)?;
    let path = format!("/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices/churn-manual");

    let load = Load::start(&env.http, address, "/churn", CLIENTS);
    poll::until("the load under way", CAP, || {
        Ok((load.sent() > 50).then_some(()))
    })?;
    let compiled_before = admin_metric(env, "coxswain_proxy_routes_compiled_total")? as u64;
    let started = Instant::now();
    let gap = Duration::from_secs(1) / RATE;
    for n in 0..UPDATES {
        let set = if n % 2 == 0 { &both[..1] } else { &both[..] };
        let status = api.merge_patch(&path, &json!({"endpoints": endpoints(set)}))?;
        if status != 200 {
            bail!("EndpointSlice update {n} answered {status}");
        }
        // Pacing to the target rate, not synchronisation.
        let due = started + gap * (n + 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            poll::pause(wait);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    // The last write (both pods) is served before the counter is read.
    let tally = load.finish();
    let compiled_after = admin_metric(env, "coxswain_proxy_routes_compiled_total")? as u64;
    println!(
        "    {UPDATES} EndpointSlice updates in {seconds:.1}s ({:.0}/s); routes compiled {compiled_before} -> {compiled_after}",
        f64::from(UPDATES) / seconds
    );
    report("load during the endpoint churn", &tally)?;
    ensure!(
        compiled_after == compiled_before,
        "endpoint changes recompiled {} routes",
        compiled_after.abs_diff(compiled_before)
    );
    env.admin.run(&[
        "-n",
        NS,
        "delete",
        "httproute/churn",
        "service/churn",
        "endpointslice/churn-manual",
    ])?;
    Ok(())
}
