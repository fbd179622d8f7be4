//! Two controller replicas: exactly one holds the Lease and writes status,
//! both serve traffic, and SIGTERM on the leader hands the Lease over. The
//! second replica runs in its own network namespace (a second "node"): the
//! proxy binds Gateway addresses without SO_REUSEPORT, so two replicas in
//! one namespace could not both serve the Gateway's address.

use std::time::{Duration, Instant};

use anyhow::ensure;
use coxswain_k8s_tests::netns_http::NetnsHttp;
use coxswain_k8s_tests::procs::Background;
use coxswain_k8s_tests::replica_netns::ReplicaNetns;

use crate::fixtures::ensure_demo;
use crate::replicas::{
    LEADER, STATUS_WRITES, change_route_and_wait_status, metric, wait_holder, wait_ok_via,
};
use crate::setup::{ADMIN, Env, POOL, start_controller};

/// The second replica's admin endpoint (its own namespace's loopback).
const REPLICA_ADMIN: &str = "127.0.0.1:9902";
/// Waits on the Lease holder (generous: the first check may race a renewal).
const TAKEOVER_CAP: Duration = Duration::from_secs(15);
/// From the leader's exit (it hands the Lease back on SIGTERM, which its log
/// must say) to the follower holding the Lease: a follower retries every
/// 5 s (RENEW_PERIOD). Measured from the exit, not from SIGTERM, so a slow
/// drain cannot shrink the wait to a single check.
const HANDOFF_CAP: Duration = Duration::from_secs(9);

pub fn leader_election_and_handoff(env: &mut Env) -> anyhow::Result<()> {
    let gateway = ensure_demo(env)?;
    let netns = ReplicaNetns::create(&env.cluster.netns(), env.cluster.octet, POOL)?;
    let replica_http = NetnsHttp {
        netns: netns.name.clone(),
    };
    let log = env.cluster.run_dir.join("controller-replica.log");
    let mut replica = start_controller(&env.coxswain, &env.sa, &replica_http, REPLICA_ADMIN, &log)?;
    let outcome = two_replicas(env, &mut replica, &replica_http, gateway);
    // Whatever happened, leave the suite with its own controller leading.
    let restored = restore_main_controller(env, &mut replica);
    drop(netns);
    outcome.and(restored)
}

fn two_replicas(
    env: &mut Env,
    replica: &mut Background,
    replica_http: &NetnsHttp,
    gateway: std::net::SocketAddr,
) -> anyhow::Result<()> {
    // The suite's controller led alone so far; it keeps the Lease.
    wait_holder(env, env.controller.pid(), TAKEOVER_CAP)?;
    ensure!(metric(&env.http, ADMIN, LEADER)? == 1.0, "leader gauge");
    ensure!(
        metric(replica_http, REPLICA_ADMIN, LEADER)? == 0.0,
        "the second replica claims to lead"
    );

    let leader_writes = metric(&env.http, ADMIN, STATUS_WRITES)?;
    change_route_and_wait_status(env, "/two-replicas")?;
    wait_ok_via(&env.http, gateway, "/two-replicas")?;
    wait_ok_via(replica_http, gateway, "/two-replicas")?;
    let leader_after = metric(&env.http, ADMIN, STATUS_WRITES)?;
    let follower_writes = metric(replica_http, REPLICA_ADMIN, STATUS_WRITES)?;
    ensure!(
        leader_after > leader_writes,
        "the leader wrote no status ({leader_writes} -> {leader_after})"
    );
    ensure!(
        follower_writes == 0.0,
        "the follower wrote status {follower_writes} times"
    );
    println!(
        "    leader pid {} wrote status ({leader_writes} -> {leader_after}), follower pid {} wrote 0; both serve {gateway}",
        env.controller.pid(),
        replica.pid()
    );

    let sigterm = Instant::now();
    env.controller.stop();
    let stopped = sigterm.elapsed();
    ensure!(
        env.controller.log_text().contains("lease released"),
        "the leader did not hand the Lease back on SIGTERM"
    );
    wait_holder(env, replica.pid(), HANDOFF_CAP)?;
    let takeover = sigterm.elapsed();
    let changed = Instant::now();
    change_route_and_wait_status(env, "/after-handoff")?;
    let status_written = changed.elapsed();
    wait_ok_via(replica_http, gateway, "/after-handoff")?;
    let new_leader_writes = metric(replica_http, REPLICA_ADMIN, STATUS_WRITES)?;
    ensure!(new_leader_writes > 0.0, "the new leader wrote no status");
    ensure!(
        metric(replica_http, REPLICA_ADMIN, LEADER)? == 1.0,
        "leader gauge"
    );
    println!(
        "    SIGTERM -> leader exited {:.0} ms, Lease taken over {:.0} ms; route change -> status written by the new leader {:.0} ms",
        stopped.as_secs_f64() * 1e3,
        takeover.as_secs_f64() * 1e3,
        status_written.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Starts a fresh suite controller if it is gone, then stops the second
/// replica, so the suite's controller takes the Lease back.
fn restore_main_controller(env: &mut Env, replica: &mut Background) -> anyhow::Result<()> {
    if env.controller.check_alive().is_err() {
        let log = env.cluster.run_dir.join("controller-restarted.log");
        env.controller = start_controller(&env.coxswain, &env.sa, &env.http, ADMIN, &log)?;
    }
    replica.stop();
    wait_holder(env, env.controller.pid(), TAKEOVER_CAP)?;
    ensure_demo(env)?;
    Ok(())
}
