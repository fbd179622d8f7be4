//! Losing the API server: the last good config keeps serving, and once it
//! is back the watchers reconnect and the controller follows changes again.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use coxswain_k8s_tests::poll;

use crate::fixtures::{ensure_demo, get, wait_status};
use crate::replicas::{change_route_and_wait_status, wait_holder, wait_route_status};
use crate::setup::Env;

/// How long traffic is checked while the API server is gone.
const OUTAGE: Duration = Duration::from_secs(5);

pub fn apiserver_loss_keeps_serving(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    change_route_and_wait_status(env, "/before-outage")?;
    wait_status(env, "/before-outage", 200)?;

    let stopping = Instant::now();
    env.cluster.stop_apiserver()?;
    let stopped = stopping.elapsed();
    let down = env
        .admin
        .output(&["get", "--raw", "/readyz", "--request-timeout=2s"], None)?;
    ensure!(!down.status.success(), "the API server still answers");
    let outcome = traffic_during_outage(env);
    // Bring it back even when traffic failed, so later scenarios have a cluster.
    let restart = Instant::now();
    env.cluster.start_apiserver()?;
    let ready = restart.elapsed();
    let requests = outcome?;
    env.controller.check_alive()?;

    let changed = Instant::now();
    env.admin
        .apply(&crate::fixtures::echo_route("/after-outage"))?;
    let first_ok = poll::until(
        "/after-outage -> 200 after the restart",
        Duration::from_secs(45),
        || Ok((get(env, "/after-outage")?.status == 200).then_some(changed.elapsed())),
    )?;
    wait_route_status(env)?;
    let status_written = changed.elapsed();
    wait_holder(env, env.controller.pid(), Duration::from_secs(20))?;
    println!(
        "    kube-apiserver stopped in {:.1} s; {requests} requests in {:.0} s without it, all 200; restart -> /readyz {:.1} s; route change -> served {:.0} ms, status written {:.0} ms",
        stopped.as_secs_f64(),
        OUTAGE.as_secs_f64(),
        ready.as_secs_f64(),
        first_ok.as_secs_f64() * 1e3,
        status_written.as_secs_f64() * 1e3
    );
    ensure_demo(env)?;
    Ok(())
}

/// Requests back to back for [`OUTAGE`]; every one must be a 200.
fn traffic_during_outage(env: &mut Env) -> anyhow::Result<usize> {
    let started = Instant::now();
    let mut requests = 0;
    while started.elapsed() < OUTAGE {
        let response = get(env, "/before-outage")?;
        requests += 1;
        if response.status != 200 {
            bail!(
                "request {requests} without the API server got {}",
                response.status
            );
        }
    }
    env.controller.check_alive()?;
    Ok(requests)
}
