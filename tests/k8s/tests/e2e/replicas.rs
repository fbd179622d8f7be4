//! What the resilience scenarios observe of a controller replica: its
//! /metrics counters, who holds the Lease, whether a route's status has
//! caught up with its spec.

use std::net::SocketAddr;

use anyhow::{Context, anyhow};
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::netns_http::NetnsHttp;
use coxswain_k8s_tests::poll;

use crate::fixtures::{CAP, NS, echo_route, route_parent};
use crate::setup::{Env, RELEASE_NAMESPACE};

pub const STATUS_WRITES: &str = "coxswain_controller_status_writes_total";
pub const LEADER: &str = "coxswain_controller_leader";
pub const LEASE: &str = "coxswain-controller";

/// One value from a replica's /metrics (`admin` inside `http`'s namespace).
pub fn metric(http: &NetnsHttp, admin: &str, name: &str) -> anyhow::Result<f64> {
    let addr: SocketAddr = admin.parse()?;
    let response = http.get(addr, "/metrics", &[])?;
    anyhow::ensure!(response.status == 200, "/metrics -> {}", response.status);
    response
        .body
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .context(format!("no {name} on {admin}/metrics"))?
        .trim()
        .parse()
        .with_context(|| format!("{name} is not a number"))
}

/// The Lease holder's process id: identities are `<hostname>-<pid>` for
/// processes outside a pod. `None` while nobody holds it.
pub fn lease_holder_pid(env: &Env) -> anyhow::Result<Option<u32>> {
    let lease = env
        .admin
        .get_json(&["-n", RELEASE_NAMESPACE, "lease", LEASE])?;
    let Some(holder) = lease["spec"]["holderIdentity"].as_str() else {
        return Ok(None);
    };
    let pid = holder
        .rsplit_once('-')
        .and_then(|(_, pid)| pid.parse().ok())
        .ok_or_else(|| anyhow!("holderIdentity {holder:?} is not <host>-<pid>"))?;
    Ok(Some(pid))
}

/// Waits until process `pid` holds the Lease.
pub fn wait_holder(env: &Env, pid: u32, cap: std::time::Duration) -> anyhow::Result<()> {
    poll::until(&format!("Lease held by pid {pid}"), cap, || {
        let holder = lease_holder_pid(env)?;
        if holder == Some(pid) {
            Ok(Some(()))
        } else {
            Err(anyhow!("held by {holder:?}"))
        }
    })
}

/// Applies the `echo` route with `prefix` and waits until its parent status
/// is Accepted at the new generation (a leader wrote it).
pub fn change_route_and_wait_status(env: &Env, prefix: &str) -> anyhow::Result<()> {
    env.admin.apply(&echo_route(prefix))?;
    wait_route_status(env)
}

/// Waits until the `echo` route's parent status is Accepted at its current
/// generation.
pub fn wait_route_status(env: &Env) -> anyhow::Result<()> {
    poll::until(
        "HTTPRoute echo status written for its generation",
        CAP,
        || {
            let route = env.admin.get_json(&["-n", NS, "httproute", "echo"])?;
            let generation = route["metadata"]["generation"].as_i64();
            let parent = route_parent(env, NS, "echo")?;
            let conditions = &parent["conditions"];
            let current = conditions.as_array().is_some_and(|all| {
                !all.is_empty()
                    && all
                        .iter()
                        .all(|c| c["observedGeneration"].as_i64() == generation)
            });
            Ok((current && is_true(conditions, "Accepted")).then_some(()))
        },
    )
}

/// Waits until GET `path` on the Gateway answers 200 from inside `http`'s
/// namespace (that is, from the replica serving there).
pub fn wait_ok_via(http: &NetnsHttp, gateway: SocketAddr, path: &str) -> anyhow::Result<()> {
    poll::until(&format!("GET {path} -> 200 in {}", http.netns), CAP, || {
        let response = http.get(gateway, path, &[])?;
        if response.status == 200 {
            Ok(Some(()))
        } else {
            Err(anyhow!("got {}", response.status))
        }
    })
}
