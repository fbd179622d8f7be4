//! `coxswain proxy`: a dedicated pool's proxy. It holds no Kubernetes
//! credentials: its config comes over the controller's stream (mutual TLS,
//! its certificate names the Gateway it serves), and the last acknowledged
//! config is kept on disk so a restart while the controller is unreachable
//! still serves.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use coxswain_ir::{Config, UnboundSocket};
use coxswain_proxy::Proxy;
use coxswain_stream::{Applier, Resources, Subscription, snapshot, subscribe};
use coxswain_translate::Statuses;
use tokio::signal::unix::{SignalKind, signal};

use crate::admin::{Admin, ReloadOutcome, ReloadState};

#[derive(Debug, clap::Args)]
pub struct ProxyCmdArgs {
    /// The controller's config stream, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub config_stream: String,
    /// Name the controller's stream certificate must carry (default: the
    /// HOST of --config-stream).
    #[arg(long, value_name = "NAME")]
    pub stream_server_name: Option<String>,
    /// Directory of `ca.crt`, `tls.crt`, `tls.key` (the pool's Secret),
    /// read again on every dial so rotated certificates are picked up.
    #[arg(long, value_name = "DIR")]
    pub stream_credentials: PathBuf,
    /// Where the last acknowledged config is kept (`last-good.json`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Admin endpoint: /healthz, /readyz, /config, /metrics.
    #[arg(long, default_value = "127.0.0.1:9901", value_name = "ADDR")]
    pub admin_address: SocketAddr,
    /// This proxy's name in the controller's logs (default: $POD_NAME,
    /// else the host name).
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,
    #[command(flatten)]
    pub proxy: crate::proxy_args::ProxyArgs,
}

/// Serves each config that arrives and keeps it on disk once served.
struct ProxyApplier {
    proxy: Proxy,
    state: Arc<ReloadState>,
    state_dir: PathBuf,
}

impl ProxyApplier {
    async fn serve(&self, config: Arc<Config>) -> Vec<UnboundSocket> {
        let report = self.proxy.apply(config).await;
        for failed in &report.failed {
            tracing::error!(address = %failed.address, transport = ?failed.transport, error = %failed.error, "cannot bind listener");
        }
        self.state.record(ReloadOutcome {
            load_errors: 0,
            translate: Duration::ZERO,
            serving: report.failed.is_empty(),
            statuses: Arc::new(Statuses::default()),
        });
        tracing::info!(listeners = report.bound.len(), "config applied");
        report.failed
    }
}

impl Applier for ProxyApplier {
    async fn apply(
        &mut self,
        resources: &Resources,
        config: Arc<Config>,
    ) -> Result<Vec<UnboundSocket>, String> {
        let unbound = self.serve(config).await;
        // Served, so it is what a restart without the controller serves.
        if let Err(e) = snapshot::save(&self.state_dir, resources) {
            tracing::warn!(error = %e, dir = %self.state_dir.display(), "cannot keep the last-good config");
        }
        Ok(unbound)
    }
}

fn server_name(args: &ProxyCmdArgs) -> anyhow::Result<String> {
    if let Some(name) = &args.stream_server_name {
        return Ok(name.clone());
    }
    match args.config_stream.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()),
        _ => anyhow::bail!("--config-stream {:?} is not HOST:PORT", args.config_stream),
    }
}

fn node_name(args: &ProxyCmdArgs) -> String {
    args.node_name
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok().filter(|n| !n.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "proxy".to_string())
}

pub async fn run(args: ProxyCmdArgs) -> anyhow::Result<()> {
    let subscription = Subscription {
        endpoint: args.config_stream.clone(),
        server_name: server_name(&args)?,
        credentials: args.stream_credentials.clone(),
        node: node_name(&args),
    };
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create {}", args.state_dir.display()))?;
    let (proxy, state) = Admin::start(args.admin_address, args.proxy.options()?, None).await?;
    let mut applier = ProxyApplier {
        proxy: proxy.clone(),
        state,
        state_dir: args.state_dir.clone(),
    };
    // Serve the last acknowledged config at once: the controller may be
    // unreachable for a while.
    let held = match snapshot::load(&args.state_dir) {
        Ok(Some((resources, config))) => {
            tracing::info!(version = %resources.version(), "serving the last-good config until the stream answers");
            applier.serve(Arc::new(config)).await;
            resources
        }
        Ok(None) => Resources::default(),
        Err(e) => {
            tracing::warn!(error = %e, "ignoring the last-good config");
            Resources::default()
        }
    };
    tracing::info!(endpoint = %subscription.endpoint, node = %subscription.node, "subscribing to the config stream");
    let stream = tokio::spawn(async move { subscribe(subscription, held, &mut applier).await });

    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    stream.abort();
    tracing::info!(drain_timeout = ?args.proxy.drain_timeout, "shutting down: draining in-flight requests");
    proxy.shutdown().await;
    tracing::info!("shutdown complete");
    Ok(())
}
