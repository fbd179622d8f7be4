//! `run`: clean up after an earlier run, register the node, serve the
//! kubelet port, bind and run pods; on SIGTERM/SIGINT stop every pod and
//! remove its namespace.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use kube::Client;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::cli::RunArgs;
use crate::image_map::{ImageMap, ImageRule};
use crate::ipam::{Cidr, IpPool};
use crate::node::{self, NodeInfo};
use crate::pod::NodeCtx;
use crate::{load_balancer, netns, pods, server};

/// How long pods get to stop on shutdown before the fakelet exits anyway.
const SHUTDOWN_CAP: Duration = Duration::from_secs(30);

fn cache_bin_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("coxswain").join("bin")
}

/// User rules first, then defaults: echo-basic from the cache directory and
/// the coxswain binary next to this one.
fn image_rules(args: &RunArgs, exe: &Path) -> anyhow::Result<Vec<ImageRule>> {
    let mut rules = Vec::new();
    if let Some(file) = &args.image_map_file {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        rules.extend(ImageMap::parse_file(&text).map_err(anyhow::Error::msg)?);
    }
    for rule in &args.image_map {
        rules.push(ImageRule::parse(rule).map_err(anyhow::Error::msg)?);
    }
    rules.push(ImageRule {
        pattern: "*echo-basic*".into(),
        binary: cache_bin_dir().join("echo-basic"),
        default_args: Vec::new(),
    });
    if let Some(dir) = exe.parent() {
        rules.push(ImageRule {
            pattern: "*coxswain*".into(),
            binary: dir.join("coxswain"),
            default_args: ["echo", "--listen", "0.0.0.0:3000"]
                .map(String::from)
                .to_vec(),
        });
    }
    Ok(rules)
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    // kube and the kubelet port both use rustls; pick the provider once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let exe = std::env::current_exe().context("locating this binary")?;
    let rules = image_rules(&args, &exe)?;
    for rule in &rules {
        if !rule.binary.exists() {
            tracing::warn!(pattern = %rule.pattern, binary = %rule.binary.display(), "mapped binary does not exist (yet)");
        }
    }
    let cidr = Cidr::parse(&args.pod_cidr).map_err(anyhow::Error::msg)?;
    let lb_pool = args
        .load_balancer_pool
        .as_deref()
        .map(Cidr::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--load-balancer-pool: {e}"))?;
    let client = Client::try_default()
        .await
        .context("connecting to the apiserver (KUBECONFIG)")?;

    let pods_dir = args.state_dir.join("pods");
    let _ = std::fs::remove_dir_all(&pods_dir);
    std::fs::create_dir_all(&pods_dir)
        .with_context(|| format!("creating {}", pods_dir.display()))?;
    let records = args.state_dir.join("netns");
    let removed = netns::remove_leftovers(&records).await?;
    if removed > 0 {
        tracing::info!(removed, "removed pod namespaces left by an earlier run");
    }
    netns::ensure_bridge(&args.bridge, cidr).await?;

    let node_ip = args.node_ip.to_string();
    let listen = SocketAddr::new(
        args.listen_address.unwrap_or(IpAddr::V4(args.node_ip)),
        args.port,
    );
    let listener = server::bind(listen).await?;
    let acceptor = server::tls_acceptor(vec![node_ip.clone(), args.node_name.clone()])?;
    let info = NodeInfo {
        name: args.node_name.clone(),
        ip: node_ip.clone(),
        kubelet_port: args.port,
        pod_cidr: cidr_text(cidr),
        max_pods: args.max_pods,
    };
    node::register(&client, &info)
        .await
        .context("registering the node")?;
    tracing::info!(node = %info.name, ip = %node_ip, %listen, "node registered");

    let ctx = Arc::new(NodeCtx {
        client: client.clone(),
        node_name: args.node_name.clone(),
        node_ip,
        bridge: args.bridge.clone(),
        pool: Mutex::new(IpPool::new(cidr)),
        images: ImageMap::new(rules),
        state_dir: args.state_dir.clone(),
        fakelet_exe: exe,
        max_grace: Duration::from_secs(args.max_grace_seconds),
    });
    let (shutdown_tx, shutdown) = watch::channel(false);
    tokio::spawn(server::serve(
        listener,
        acceptor,
        args.state_dir.clone(),
        shutdown.clone(),
    ));
    tokio::spawn(node::heartbeat(client, info, shutdown.clone()));
    tokio::spawn(pods::bind_unscheduled(ctx.clone(), shutdown.clone()));
    let balancer = lb_pool.map(|pool| {
        tokio::spawn(load_balancer::run(
            ctx.client.clone(),
            ctx.node_name.clone(),
            pool,
            shutdown.clone(),
        ))
    });
    let runner = tokio::spawn(pods::run_node_pods(ctx, shutdown));

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping pods"),
        _ = int.recv() => tracing::info!("SIGINT: stopping pods"),
    }
    let _ = shutdown_tx.send(true);
    if tokio::time::timeout(SHUTDOWN_CAP, runner).await.is_err() {
        tracing::warn!("pods did not stop in time; removing namespaces anyway");
    }
    if let Some(balancer) = balancer {
        // It removes its node routes on shutdown.
        let _ = tokio::time::timeout(Duration::from_secs(5), balancer).await;
    }
    netns::remove_leftovers(&records).await?;
    Ok(())
}

fn cidr_text(cidr: Cidr) -> String {
    format!("{}/{}", cidr.network, cidr.prefix)
}
