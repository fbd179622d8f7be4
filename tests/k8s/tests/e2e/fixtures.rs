//! The example app (examples/kubernetes) as the common fixture, and small
//! helpers over Gateway API status.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, anyhow};
use coxswain_k8s_tests::kubectl::{condition, is_true};
use coxswain_k8s_tests::netns_http::Response;
use coxswain_k8s_tests::poll;
use serde_json::Value;

use crate::setup::{ADMIN, Env};

pub const NS: &str = "coxswain-demo";
pub const CAP: Duration = Duration::from_secs(60);

/// Applies examples/kubernetes (idempotent; also undoes what an earlier
/// scenario changed) and waits until the Gateway has an address and `/`
/// answers 200. Returns the Gateway's address.
pub fn ensure_demo(env: &mut Env) -> anyhow::Result<SocketAddr> {
    let dir = env.repo.join("examples/kubernetes");
    env.admin
        .run(&["apply", "-f", &dir.display().to_string()])?;
    let address = poll::until("Gateway demo Programmed with an address", CAP, || {
        let gateway = env.admin.get_json(&["-n", NS, "gateway", "demo"])?;
        if !is_true(&gateway["status"]["conditions"], "Programmed") {
            return Ok(None);
        }
        let ip = gateway["status"]["addresses"][0]["value"]
            .as_str()
            .context("no status.addresses")?;
        Ok(Some(format!("{ip}:80").parse::<SocketAddr>()?))
    })?;
    env.gateway = Some(address);
    wait_status(env, "/", 200)?;
    Ok(address)
}

/// One unlabelled series from the controller process's /metrics.
pub fn admin_metric(env: &Env, name: &str) -> anyhow::Result<f64> {
    let admin: SocketAddr = ADMIN.parse()?;
    let metrics = env.http.get(admin, "/metrics", &[])?;
    let line = metrics
        .body
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .ok_or_else(|| anyhow!("no {name} in /metrics"))?;
    let value = line.split_whitespace().last().unwrap_or_default();
    value.parse::<f64>().context(format!("{name} value"))
}

pub fn get(env: &Env, path: &str) -> anyhow::Result<Response> {
    let address = env
        .gateway
        .ok_or_else(|| anyhow!("no Gateway address yet"))?;
    env.http.get(address, path, &[])
}

/// Waits until GET `path` on the Gateway answers `status`.
pub fn wait_status(env: &Env, path: &str, status: u16) -> anyhow::Result<Response> {
    poll::until(&format!("GET {path} -> {status}"), CAP, || {
        let response = get(env, path)?;
        if response.status == status {
            Ok(Some(response))
        } else {
            Err(anyhow!("got {}", response.status))
        }
    })
}

/// Our parent status entry of an HTTPRoute (the first parent).
pub fn route_parent(env: &Env, namespace: &str, name: &str) -> anyhow::Result<Value> {
    let route = env.admin.get_json(&["-n", namespace, "httproute", name])?;
    route["status"]["parents"]
        .as_array()
        .and_then(|p| p.first())
        .cloned()
        .ok_or_else(|| anyhow!("HTTPRoute {namespace}/{name} has no parent status yet"))
}

/// (status, reason) of a condition, for messages and checks.
pub fn condition_state(conditions: &Value, type_: &str) -> Option<(String, String)> {
    let c = condition(conditions, type_)?;
    Some((
        c["status"].as_str().unwrap_or_default().to_string(),
        c["reason"].as_str().unwrap_or_default().to_string(),
    ))
}

/// An HTTPRoute `echo` variant on the demo Gateway with one PathPrefix match.
pub fn echo_route(prefix: &str) -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: echo
  namespace: {NS}
spec:
  parentRefs:
    - name: demo
  rules:
    - matches:
        - path:
            type: PathPrefix
            value: {prefix}
      backendRefs:
        - name: echo
          port: 80
"#
    )
}
