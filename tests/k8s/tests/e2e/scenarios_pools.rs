//! A dedicated Gateway: its own pool of `coxswain proxy` pods (real
//! processes under the fakelet, no Kubernetes credentials) fed over the
//! controller's config stream (mTLS, certificates the controller issued).
//! The pool serves, follows a route change, serves its last-good config
//! after a restart while the controller is down, picks the stream up again,
//! and goes away when the Gateway returns to the shared proxies.
//!
//! The controller runs with the chart's RBAC for `dedicatedPools.enabled`
//! (rendered by Helm), in place of the suite's own; both are restored after.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail, ensure};
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use serde_json::Value;

use crate::fixtures::{NS, ensure_demo};
use crate::setup::{ADMIN, Env, POOL, RELEASE_NAMESPACE, start_controller, start_controller_with};

/// The pods' gateway on the fakelet's bridge: the controller's address as
/// the pods see it (it runs in the cluster's network namespace).
pub const BRIDGE: &str = "10.244.0.1";
pub const STREAM_PORT: u16 = 19902;
pub const GATEWAY: &str = "pooled";
pub const LISTENER_PORT: u16 = 8080;
/// Pod start includes waiting for the controller's Secret and a probe.
pub const POOL_CAP: Duration = Duration::from_secs(120);

pub const OBJECTS: &str = r#"
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata:
  name: pool
  namespace: coxswain-demo
spec:
  serviceType: ClusterIP
  replicas: 1
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: pooled
  namespace: coxswain-demo
spec:
  gatewayClassName: coxswain
  infrastructure:
    parametersRef:
      group: gateway.coxswain-labs.dev
      kind: CoxswainGatewayParameters
      name: pool
  listeners:
    - name: http
      port: 8080
      protocol: HTTP
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: pooled
  namespace: coxswain-demo
spec:
  parentRefs:
    - name: pooled
  rules:
    - matches:
        - path: {type: PathPrefix, value: /pool}
      backendRefs:
        - name: echo
          port: 80
"#;

pub fn dedicated_pool_lifecycle(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    apply_pool_rbac(env)?;
    let outcome = with_pools_controller(env);
    // Whatever happened: the suite's RBAC and controller again.
    let restored = restore(env);
    outcome.and(restored)
}

/// A pools controller's flags: pods dial `BRIDGE:STREAM_PORT`; the
/// controller listens on `listen`.
pub fn pools_args(listen: &str) -> Vec<String> {
    [
        "--config-stream-advertise",
        &format!("{BRIDGE}:{STREAM_PORT}"),
        "--config-stream-listen",
        listen,
        "--proxy-image",
        "coxswain-proxy:e2e",
    ]
    .into_iter()
    .map(str::to_string)
    .collect()
}

fn start_pools_controller(env: &mut Env, log: &str) -> anyhow::Result<()> {
    env.controller.stop();
    let log = env.cluster.run_dir.join(log);
    env.controller = start_controller_with(
        &env.coxswain,
        &env.sa,
        &env.http,
        ADMIN,
        &log,
        &pools_args(&format!("0.0.0.0:{STREAM_PORT}")),
    )?;
    Ok(())
}

fn with_pools_controller(env: &mut Env) -> anyhow::Result<()> {
    start_pools_controller(env, "controller-pools.log")?;
    let applied = Instant::now();
    env.admin.apply(OBJECTS)?;
    let pod = wait_programmed(env)?;
    let address: SocketAddr = format!("{pod}:{LISTENER_PORT}").parse()?;
    wait_ok(env, address, "/pool")?;
    println!(
        "    apply -> pool pod {pod} serving /pool {:.1} s",
        applied.elapsed().as_secs_f64()
    );
    wait_model_labels(env, "dedicated", Some("pooled-coxswain"))?;
    let secret = env
        .admin
        .get_json(&["-n", NS, "secret", "pooled-coxswain-stream"])?;
    for key in ["ca.crt", "tls.crt", "tls.key"] {
        ensure!(
            !secret["data"][key].is_null(),
            "stream Secret without {key}"
        );
    }
    let account = env
        .admin
        .get_json(&["-n", NS, "serviceaccount", "pooled-coxswain"])?;
    ensure!(
        account["automountServiceAccountToken"] == Value::Bool(false),
        "the pool's ServiceAccount mounts a token"
    );

    // A route change reaches the pool over the stream.
    let changed = Instant::now();
    patch_pooled(
        env,
        "httproute",
        r#"[{"op":"replace","path":"/spec/rules/0/matches/0/path/value","value":"/moved"}]"#,
    )?;
    wait_ok(env, address, "/moved")?;
    println!(
        "    route change -> served by the pool {:.0} ms",
        changed.elapsed().as_secs_f64() * 1e3
    );

    // Controller down, proxy killed: the restarted proxy serves its
    // last-good config from disk.
    env.controller.stop();
    let restarts = restart_count(env)?;
    kill_proxies()?;
    poll::until("pool proxy restarted and Ready", POOL_CAP, || {
        let pod = pool_pod(env)?;
        let ready = is_true(&pod["status"]["conditions"], "Ready");
        let count = pod["status"]["containerStatuses"][0]["restartCount"].as_i64();
        Ok((ready && count > Some(restarts)).then_some(()))
    })?;
    let served = env.http.get(address, "/moved", &[])?;
    ensure!(
        served.status == 200,
        "restarted without the controller: /moved answered {} (last-good config not served)",
        served.status
    );
    println!("    proxy killed with the controller down: restarted, serves its last-good config");

    // The controller back: the proxy resubscribes, the Gateway is
    // Programmed again and follows changes.
    start_pools_controller(env, "controller-pools-restarted.log")?;
    wait_programmed(env)?;
    patch_pooled(
        env,
        "httproute",
        r#"[{"op":"replace","path":"/spec/rules/0/matches/0/path/value","value":"/again"}]"#,
    )?;
    wait_ok(env, address, "/again")?;

    // Back to the shared proxies: the pool and its credentials go.
    patch_pooled(
        env,
        "gateway",
        r#"[{"op":"remove","path":"/spec/infrastructure"}]"#,
    )?;
    poll::until(
        "pool Deployment and stream Secret deleted",
        POOL_CAP,
        || {
            let deployment = env.admin.run(&[
                "-n",
                NS,
                "get",
                "deployment",
                "--ignore-not-found",
                "-o",
                "name",
            ])?;
            let secret = env.admin.run(&[
                "-n",
                NS,
                "get",
                "secret",
                "pooled-coxswain-stream",
                "--ignore-not-found",
                "-o",
                "name",
            ])?;
            Ok((!deployment.contains("pooled-coxswain") && secret.trim().is_empty()).then_some(()))
        },
    )?;
    wait_model_labels(env, "shared", None)?;
    println!(
        "    back to the shared proxies: Deployment and stream Secret deleted, Gateway labelled shared"
    );
    Ok(())
}

/// The chart's ClusterRole and Role with `dedicatedPools.enabled` and the
/// suite's address pool, applied over the default install's.
pub fn apply_pool_rbac(env: &Env) -> anyhow::Result<()> {
    let output = Command::new(env.repo.join("scripts/helm.sh"))
        .args(["template", "coxswain"])
        .arg(env.repo.join("deploy/helm/coxswain"))
        .args(["--namespace", RELEASE_NAMESPACE, "--kube-version", "1.35.0"])
        .args(["--set", "dedicatedPools.enabled=true"])
        // As the suite's controller runs: addresses from the pool.
        .args(["--set", &format!("addressPool={POOL}")])
        .args(["--show-only", "templates/clusterrole.yaml"])
        .args(["--show-only", "templates/role.yaml"])
        .output()
        .context("scripts/helm.sh")?;
    if !output.status.success() {
        bail!(
            "helm template failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    env.admin.apply(&String::from_utf8(output.stdout)?)?;
    Ok(())
}

pub fn restore(env: &mut Env) -> anyhow::Result<()> {
    let _ = env.admin.run(&[
        "-n",
        NS,
        "delete",
        "gateway,httproute,coxswaingatewayparameters",
        GATEWAY,
        "pool",
        "--ignore-not-found",
    ]);
    env.admin.run(&[
        "apply",
        "-f",
        &env.repo.join("deploy/install.yaml").display().to_string(),
    ])?;
    env.admin.run(&[
        "-n",
        RELEASE_NAMESPACE,
        "scale",
        "deployment/coxswain",
        "--replicas=0",
    ])?;
    env.controller.stop();
    let log = env.cluster.run_dir.join("controller-after-pools.log");
    env.controller = start_controller(&env.coxswain, &env.sa, &env.http, ADMIN, &log)?;
    ensure_demo(env)?;
    Ok(())
}

pub fn pool_pod(env: &Env) -> anyhow::Result<Value> {
    let pods = env.admin.get_json(&[
        "-n",
        NS,
        "pods",
        "-l",
        &format!("gateway.networking.k8s.io/gateway-name={GATEWAY}"),
    ])?;
    pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["metadata"]["deletionTimestamp"].is_null())
        .cloned()
        .ok_or_else(|| anyhow!("no pool pod"))
}

fn restart_count(env: &Env) -> anyhow::Result<i64> {
    pool_pod(env)?["status"]["containerStatuses"][0]["restartCount"]
        .as_i64()
        .context("no restartCount")
}

/// Waits for the Gateway to be Programmed by its pool; returns the pod IP.
pub fn wait_programmed(env: &Env) -> anyhow::Result<String> {
    poll::until("dedicated Gateway Programmed by its pool", POOL_CAP, || {
        let gateway = env.admin.get_json(&["-n", NS, "gateway", GATEWAY])?;
        let conditions = &gateway["status"]["conditions"];
        if !is_true(conditions, "Programmed") {
            return Err(anyhow!("Programmed not True: {conditions}"));
        }
        let pod = pool_pod(env)?;
        Ok(pod["status"]["podIP"].as_str().map(str::to_string))
    })
}

pub fn wait_ok(env: &Env, address: SocketAddr, path: &str) -> anyhow::Result<()> {
    poll::until(&format!("GET {path} via the pool -> 200"), POOL_CAP, || {
        let response = env.http.get(address, path, &[])?;
        if response.status != 200 {
            return Err(anyhow!("got {}", response.status));
        }
        ensure!(
            response.echo_pod().is_some(),
            "answered by something other than echo: {}",
            response.body
        );
        Ok(Some(()))
    })
}

/// SIGKILL every pool proxy process (only this scenario's pool runs).
fn kill_proxies() -> anyhow::Result<()> {
    let pattern = format!("proxy --config-stream {BRIDGE}:{STREAM_PORT}");
    let status = Command::new("pkill")
        .args(["-KILL", "-f", &pattern])
        .status()?;
    ensure!(status.success(), "no proxy process matched {pattern:?}");
    Ok(())
}

/// `kubectl get gateway -L` shows the model and pool: the controller's
/// labels on the Gateway.
fn wait_model_labels(env: &Env, model: &str, pool: Option<&str>) -> anyhow::Result<()> {
    poll::until(&format!("Gateway labelled {model}"), POOL_CAP, || {
        let gateway = env.admin.get_json(&["-n", NS, "gateway", GATEWAY])?;
        let labels = &gateway["metadata"]["labels"];
        let seen = (
            labels["gateway.coxswain-labs.dev/deployment-model"].as_str(),
            labels["gateway.coxswain-labs.dev/pool"].as_str(),
        );
        ensure!(seen == (Some(model), pool), "labels {labels}");
        Ok(Some(()))
    })
}

/// A JSON patch to this scenario's object of `kind` (all are named GATEWAY).
pub fn patch_pooled(env: &Env, kind: &str, patch: &str) -> anyhow::Result<()> {
    env.admin
        .run(&["-n", NS, "patch", kind, GATEWAY, "--type=json", "-p", patch])?;
    Ok(())
}
