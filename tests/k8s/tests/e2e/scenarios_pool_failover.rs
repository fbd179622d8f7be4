//! Controller failover under a dedicated pool with traffic flowing: two
//! controller replicas behind the config stream's Service address (each
//! connection to the next replica, as kube-proxy does), the pool's proxy
//! fed by the leader. The leader exits; requests through the pool go on
//! without a single failure, the follower takes the Lease, the proxy's
//! redial lands on it and the pool follows a route change made after.

use std::net::SocketAddr;
use std::time::Instant;

use anyhow::ensure;
use coxswain_k8s_tests::netns_http::NetnsHttp;
use coxswain_k8s_tests::procs::Background;
use coxswain_k8s_tests::replica_netns::ReplicaNetns;
use coxswain_k8s_tests::service_vip::ServiceVip;

use crate::fixtures::ensure_demo;
use crate::load::Load;
use crate::replicas::wait_holder;
use crate::scenarios_pools::{
    BRIDGE, LISTENER_PORT, OBJECTS, POOL_CAP, STREAM_PORT, apply_pool_rbac, patch_pooled,
    pools_args, restore, wait_ok, wait_programmed,
};
use crate::setup::{ADMIN, Env, POOL, start_controller_with};

/// The second replica's admin endpoint (its own namespace's loopback).
const REPLICA_ADMIN: &str = "127.0.0.1:9902";
/// The suite's replica listens here, behind the Service address.
const LEADER_STREAM: &str = "127.0.0.1:19903";
/// Enough to keep requests in flight through the whole handover.
const CLIENTS: usize = 2;

pub fn pool_survives_controller_failover(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    apply_pool_rbac(env)?;
    let netns = ReplicaNetns::create(&env.cluster.netns(), env.cluster.octet, POOL)?;
    let replica_http = NetnsHttp {
        netns: netns.name.clone(),
    };
    let replica_stream: SocketAddr =
        format!("10.215.{}.2:{STREAM_PORT}", env.cluster.octet).parse()?;
    let service = ServiceVip::start(
        &env.cluster.netns(),
        format!("{BRIDGE}:{STREAM_PORT}").parse()?,
        vec![LEADER_STREAM.parse()?, replica_stream],
    )?;
    let mut replica = None;
    let outcome = failover(env, &replica_http, &mut replica, &service);
    // Whatever happened: one suite controller, leading, with its RBAC.
    if let Some(mut replica) = replica {
        replica.stop();
    }
    drop(service);
    let restored = restore(env);
    drop(netns);
    outcome.and(restored)
}

fn failover(
    env: &mut Env,
    replica_http: &NetnsHttp,
    replica: &mut Option<Background>,
    service: &ServiceVip,
) -> anyhow::Result<()> {
    env.controller.stop();
    env.controller = start_controller_with(
        &env.coxswain,
        &env.sa,
        &env.http,
        ADMIN,
        &env.cluster.run_dir.join("controller-failover-a.log"),
        &pools_args(LEADER_STREAM),
    )?;
    wait_holder(env, env.controller.pid(), POOL_CAP)?;
    let follower = replica.insert(start_controller_with(
        &env.coxswain,
        &env.sa,
        replica_http,
        REPLICA_ADMIN,
        &env.cluster.run_dir.join("controller-failover-b.log"),
        &pools_args(&format!("0.0.0.0:{STREAM_PORT}")),
    )?);
    env.admin.apply(OBJECTS)?;
    let pod = wait_programmed(env)?;
    let address: SocketAddr = format!("{pod}:{LISTENER_PORT}").parse()?;
    wait_ok(env, address, "/pool")?;
    let dialled = service.accepted();

    let load = Load::start(&env.http, address, "/pool", CLIENTS);
    let sigterm = Instant::now();
    env.controller.stop();
    ensure!(
        env.controller.log_text().contains("lease released"),
        "the leader did not hand the Lease back on SIGTERM"
    );
    wait_holder(env, follower.pid(), POOL_CAP)?;
    let takeover = sigterm.elapsed();

    // Made after the handover: only the new leader can bring it to the pool.
    let changed = Instant::now();
    patch_pooled(
        env,
        "httproute",
        r#"[{"op":"add","path":"/spec/rules/0/matches/-","value":{"path":{"type":"PathPrefix","value":"/after-failover"}}}]"#,
    )?;
    wait_ok(env, address, "/after-failover")?;
    let followed = changed.elapsed();
    wait_programmed(env)?;
    let tally = load.finish();
    ensure!(
        service.accepted() > dialled,
        "the proxy never dialled the stream again after the leader left"
    );
    ensure!(tally.sent > 0, "no requests were sent");
    ensure!(
        tally.failed == 0,
        "{} of {} requests through the pool failed during failover: {:?}",
        tally.failed,
        tally.sent,
        tally.reasons
    );
    println!(
        "    leader SIGTERM -> follower holds the Lease {:.1} s; route change after -> served by the pool {:.0} ms; {} requests over {:.1} s, 0 failed",
        takeover.as_secs_f64(),
        followed.as_secs_f64() * 1e3,
        tally.sent,
        tally.seconds
    );
    Ok(())
}
