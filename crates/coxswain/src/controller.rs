//! `coxswain controller`: the Kubernetes provider feeding the same
//! translator and in-process proxy as `run`, with the same admin endpoint.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use coxswain_ir::UnboundSocket;
use coxswain_provider_k8s::{
    AddressMode, AddressPool, Client, ControllerConfig, Dataplane, LeaseConfig, Metrics,
    PoolSettings, Timing,
};
use coxswain_proxy::Proxy;
use coxswain_translate::{Output, mark_unbound};
use tokio::signal::unix::{SignalKind, signal};

use crate::admin::{Admin, MetricsRenderer, ReloadOutcome, ReloadState};

#[derive(Debug, clap::Args)]
pub struct ControllerArgs {
    /// GatewayClasses with this spec.controllerName are served.
    #[arg(long, default_value = coxswain_translate::DEFAULT_CONTROLLER_NAME, value_name = "NAME")]
    pub controller_name: String,
    /// Serve only the GatewayClass of this name (default: every class of ours).
    #[arg(long, value_name = "NAME")]
    pub gateway_class_name: Option<String>,
    /// Give each Gateway its own address from this CIDR and bind its
    /// listeners there (bare metal, local clusters). Without it each
    /// Gateway gets a LoadBalancer Service `<gateway>-coxswain`.
    #[arg(long, value_name = "CIDR")]
    pub gateway_address_pool: Option<AddressPool>,
    /// Labels of the proxy pods, for the Gateway Services' selector.
    #[arg(long, default_value = "app.kubernetes.io/name=coxswain", value_name = "KEY=VALUE", value_parser = parse_selector)]
    pub proxy_selector: Vec<(String, String)>,
    /// Address listeners bind to when a Gateway has no assigned address.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub bind_address: IpAddr,
    /// Admin endpoint: /healthz, /readyz, /config, /status, /metrics, the
    /// read-only console (/console/) and its JSON views (/api/v1/).
    #[arg(long, default_value = "127.0.0.1:9901", value_name = "ADDR")]
    pub admin_address: SocketAddr,
    /// Namespace of the leader-election Lease (default: $POD_NAMESPACE,
    /// else the kubeconfig's namespace).
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_lease_namespace: Option<String>,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "coxswain-controller", value_name = "NAME")]
    pub leader_lease_name: String,
    /// Where dedicated proxy pools dial the config stream, HOST:PORT.
    /// Setting it enables pools: a Gateway whose parametersRef (or whose
    /// class's) names a CoxswainGatewayParameters gets its own Deployment,
    /// fed over the stream (docs/dedicated-pools.md).
    #[arg(long, value_name = "HOST:PORT", requires = "proxy_image")]
    pub config_stream_advertise: Option<String>,
    /// Address the config stream listens on (with --config-stream-advertise).
    #[arg(long, default_value = "0.0.0.0:9902", value_name = "ADDR")]
    pub config_stream_listen: SocketAddr,
    /// Name the pools' proxies expect on the stream's certificate
    /// (default: the HOST of --config-stream-advertise).
    #[arg(long, value_name = "NAME", requires = "config_stream_advertise")]
    pub config_stream_server_name: Option<String>,
    /// Image of the pools' proxies when their parameters name none.
    #[arg(long, value_name = "IMAGE", requires = "config_stream_advertise")]
    pub proxy_image: Option<String>,
    #[command(flatten)]
    pub proxy: crate::proxy_args::ProxyArgs,
    #[command(flatten)]
    pub ingress: crate::ingress_args::IngressArgs,
}

/// Dedicated pools' settings, when --config-stream-advertise is given.
fn pool_settings(args: &ControllerArgs) -> anyhow::Result<Option<PoolSettings>> {
    let (Some(endpoint), Some(image)) = (&args.config_stream_advertise, &args.proxy_image) else {
        return Ok(None);
    };
    let host = match endpoint.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            host.trim_start_matches('[').trim_end_matches(']')
        }
        _ => anyhow::bail!("--config-stream-advertise {endpoint:?} is not HOST:PORT"),
    };
    Ok(Some(PoolSettings {
        image: image.clone(),
        stream_endpoint: endpoint.clone(),
        stream_server_name: args
            .config_stream_server_name
            .clone()
            .unwrap_or_else(|| host.to_string()),
    }))
}

fn parse_selector(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("{text:?} is not KEY=VALUE")),
    }
}

/// Applies each translation to the proxy and records it for the admin endpoint.
struct ProxyDataplane {
    proxy: Proxy,
    state: Arc<ReloadState>,
    /// Sockets of the last applied IR that could not be bound.
    unbound: tokio::sync::Mutex<Vec<UnboundSocket>>,
}

impl Dataplane for ProxyDataplane {
    async fn apply(&self, output: &Output, timing: Timing) -> Vec<UnboundSocket> {
        let mut unbound = self.unbound.lock().await;
        // An unchanged IR is applied again while a socket of it is unbound:
        // the port may have become free.
        if timing.ir_changed || !unbound.is_empty() {
            let apply_start = std::time::Instant::now();
            let report = self.proxy.apply(Arc::new(output.ir.clone())).await;
            let apply = apply_start.elapsed();
            for failed in &report.failed {
                tracing::error!(address = %failed.address, transport = ?failed.transport, error = %failed.error, "cannot bind listener");
            }
            *unbound = report.failed.clone();
            tracing::info!(
                listeners = report.bound.len(),
                wait_ms = timing.waited.as_secs_f64() * 1e3,
                translate_ms = timing.translate.as_secs_f64() * 1e3,
                apply_ms = apply.as_secs_f64() * 1e3,
                since_change_ms = timing.first_change.elapsed().as_secs_f64() * 1e3,
                "config applied"
            );
        }
        let mut statuses = output.statuses.clone();
        mark_unbound(&mut statuses, &output.ir, &unbound, &crate::run::now());
        self.state.record(ReloadOutcome {
            load_errors: 0,
            translate: timing.translate,
            serving: unbound.is_empty(),
            statuses: Arc::new(statuses),
        });
        unbound.clone()
    }
}

pub async fn run(args: ControllerArgs) -> anyhow::Result<()> {
    let client = Client::try_default()
        .await
        .context("cannot reach Kubernetes (KUBECONFIG or in-cluster config)")?;
    let metrics = Arc::new(Metrics::default());
    let rendered = metrics.clone();
    let render: MetricsRenderer = Arc::new(move |out: &mut String| rendered.render(out));
    let (proxy, state) =
        Admin::start(args.admin_address, args.proxy.options()?, Some(render)).await?;

    let lease_namespace = args
        .leader_lease_namespace
        .clone()
        .or_else(|| {
            std::env::var("POD_NAMESPACE")
                .ok()
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| client.default_namespace().to_string());
    let addresses = match args.gateway_address_pool {
        Some(pool) => AddressMode::Pool(pool),
        None => AddressMode::LoadBalancer {
            proxy_selector: args
                .proxy_selector
                .iter()
                .cloned()
                .collect::<BTreeMap<_, _>>(),
        },
    };
    let config = ControllerConfig {
        controller_name: args.controller_name.clone(),
        gateway_class_name: args.gateway_class_name.clone(),
        default_address: args.bind_address,
        addresses,
        lease: LeaseConfig {
            namespace: lease_namespace,
            name: args.leader_lease_name.clone(),
            identity: coxswain_provider_k8s::default_identity(),
        },
        ingress: args.ingress.options(),
        pools: pool_settings(&args)?,
    };
    tracing::info!(lease = ?config.lease, addresses = ?config.addresses, pools = ?config.pools, "controller starting");
    let dataplane = ProxyDataplane {
        proxy: proxy.clone(),
        state,
        unbound: tokio::sync::Mutex::new(Vec::new()),
    };
    let stream = match &config.pools {
        Some(_) => Some(
            tokio::net::TcpListener::bind(args.config_stream_listen)
                .await
                .with_context(|| {
                    format!(
                        "cannot listen for the config stream on {}",
                        args.config_stream_listen
                    )
                })?,
        ),
        None => None,
    };
    let lease = config.lease.clone();
    let controller = tokio::spawn(coxswain_provider_k8s::run(
        client.clone(),
        config,
        dataplane,
        metrics,
        stream,
    ));

    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    controller.abort();
    // Stop writing status first, then let another replica lead right away.
    let _ = controller.await;
    coxswain_provider_k8s::release(client, &lease).await;
    tracing::info!(drain_timeout = ?args.proxy.drain_timeout, "shutting down: draining in-flight requests");
    proxy.shutdown().await;
    tracing::info!("shutdown complete");
    Ok(())
}
