//! The controller loop: watch -> coalesce -> translate -> dataplane, and
//! hand the statuses to the writer (which acts only while we lead).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use coxswain_api::ObjectKey;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_ir::UnboundSocket;
use coxswain_translate::{
    IngressOptions, Options, Output, Translator, dedicated_gateways, mark_unbound,
};
use kube::Client;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::address_pool::allocate;
use crate::addresses::{
    AddressMemory, AddressMode, overlay_load_balancer_addresses, pool_requests,
};
use crate::coalesce::{CAP, QUIET, gather};
use crate::gateway_labels;
use crate::leader::{self, LeaseConfig};
use crate::metrics::Metrics;
use crate::ours::{for_translation, our_classes, our_gateways};
use crate::pool::PoolSettings;
use crate::pool_plan;
use crate::pool_service::pool_bind;
use crate::pool_status::{StreamFeedback, overlay_pool_status};
use crate::status::{StatusJob, WriterConfig, writer};
use crate::store::Store;
use crate::stream_feed::StreamFeed;

#[derive(Clone, Debug)]
pub struct ControllerConfig {
    pub controller_name: String,
    /// Serve only this GatewayClass (of ours), when set.
    pub gateway_class_name: Option<String>,
    /// Listeners bind here when no address is assigned.
    pub default_address: IpAddr,
    pub addresses: AddressMode,
    pub lease: LeaseConfig,
    /// Where our Ingresses are served.
    pub ingress: IngressOptions,
    /// Dedicated proxy pools: provisioned only when set (without it a
    /// parametersRef naming CoxswainGatewayParameters is InvalidParameters).
    pub pools: Option<PoolSettings>,
}

/// Where translated config goes (the in-process proxy, in the binary).
pub trait Dataplane: Send + Sync + 'static {
    /// Serve `output.ir`; called after every translation (statuses may
    /// change without the IR changing: see [`Timing::ir_changed`]).
    /// Returns the sockets of the IR that are not bound, which the written
    /// status reports as not Programmed.
    fn apply(
        &self,
        output: &Output,
        timing: Timing,
    ) -> impl Future<Output = Vec<UnboundSocket>> + Send;
}

/// For latency logs.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// When a watcher received the first change of the burst that led to
    /// this config (for a config-stream report: when the loop woke).
    pub first_change: Instant,
    /// From `first_change` until translating began: queued behind the
    /// previous translation, then gathering the burst.
    pub waited: Duration,
    pub translate: Duration,
    /// False when the IR equals the one applied before.
    pub ir_changed: bool,
}

/// Runs until every watcher has stopped (they retry forever, so in practice
/// until the process exits). The dataplane keeps its last config after.
/// With pools configured, `stream` is where their proxies subscribe.
pub async fn run<D: Dataplane>(
    client: Client,
    config: ControllerConfig,
    dataplane: D,
    metrics: Arc<Metrics>,
    stream: Option<TcpListener>,
) {
    let (changes_tx, mut changes) = mpsc::unbounded_channel();
    // Every task lives in these sets: dropping this future stops them all
    // (no status writes or Lease renewals after shutdown).
    let _watchers = crate::watch::spawn_all(&client, changes_tx);
    let mut tasks = JoinSet::new();
    let leading = leader::spawn(
        &mut tasks,
        client.clone(),
        config.lease.clone(),
        metrics.clone(),
    );
    let mut feed = match (&config.pools, stream) {
        (Some(settings), Some(listener)) => {
            let started = StreamFeed::start(
                &mut tasks,
                &client,
                &config.lease.namespace,
                settings,
                listener,
                leading.clone(),
            )
            .await;
            match started {
                Ok(feed) => Some(feed),
                Err(e) => {
                    tracing::error!(error = %e, "config stream not served: dedicated pools get no config");
                    None
                }
            }
        }
        (Some(_), None) => {
            tracing::error!("pools configured without a stream listener: they get no config");
            None
        }
        (None, _) => None,
    };
    let mut reports = feed.as_ref().map(StreamFeed::reports);
    let (jobs_tx, jobs) = watch::channel(None);
    tasks.spawn(writer::run(
        client.clone(),
        jobs,
        leading,
        WriterConfig::new(&config.controller_name),
        metrics.clone(),
    ));
    let mut store = Store::default();
    // Memoises per-route results: a one-route change costs about one route.
    let mut translator = Translator::new();
    let mut served: Option<coxswain_ir::Config> = None;
    let mut addresses = AddressMemory::new();
    let mut announced_ready = false;
    let mut ingress_problems = crate::ingress_problems::IngressProblemLog::default();
    let mut reserved_labels = crate::labels::ReservedLabelLog::default();
    loop {
        let first = Instant::now();
        let mut first_seen = first;
        // Nothing queued while the last pass ran: a change now is not part
        // of a burst under way.
        let idle = changes.is_empty();
        let mut reported_now = false;
        tokio::select! {
            change = changes.recv() => {
                let Some((seen, change)) = change else { break };
                first_seen = seen;
                store.apply(change);
                // A lone change is served at once; one with others right
                // behind it opens a burst, gathered until quiet.
                let lone = idle && changes.is_empty();
                if !lone
                    && gather(&mut changes, &mut store, first, QUIET, CAP)
                        .await
                        .is_none()
                {
                    break;
                }
            }
            // A proxy acknowledged or rejected: the pool's status follows.
            () = reported(&mut reports) => reported_now = true,
        }
        if !store.ready() {
            continue; // no partial config: wait for every kind's first list
        }
        if !announced_ready {
            tracing::info!("initial list of every kind complete");
            announced_ready = true;
        }
        // The writer's current job is the last translation's.
        let last = jobs_tx.borrow().clone();
        if !store.take_changed()
            && !reported_now
            && let Some(last) = last
        {
            // Only route or Gateway statuses changed, mostly our own write-backs
            // coming back: translating would give the same config and
            // statuses. The writer still needs the objects as they are now.
            let filter = config.gateway_class_name.as_deref();
            let job = StatusJob {
                snapshot: Arc::new(for_translation(store.snapshot(), filter)),
                ..StatusJob::clone(&last)
            };
            jobs_tx.send_replace(Some(Arc::new(job)));
            Metrics::add(&metrics.status_echoes);
            continue;
        }
        let translate_start = Instant::now();
        let now = Timestamp::now();
        let (mut output, mut job, reserved) = translate_store(
            &mut translator,
            &mut addresses,
            &store,
            &config,
            feed.as_mut(),
            now,
        );
        reserved_labels.update(reserved);
        // The shared proxies never serve a dedicated Gateway.
        drop_gateways(&mut output.ir, &output.dedicated);
        let ir_changed = served.as_ref() != Some(&output.ir);
        let timing = Timing {
            first_change: first_seen,
            waited: translate_start.saturating_duration_since(first_seen),
            translate: translate_start.elapsed(),
            ir_changed,
        };
        Metrics::add(&metrics.translations);
        let unbound = dataplane.apply(&output, timing).await;
        mark_unbound(
            Arc::make_mut(&mut job.statuses),
            &output.ir,
            &unbound,
            &Time(now),
        );
        ingress_problems.update(&job.statuses);
        if ir_changed {
            served = Some(output.ir.clone());
        }
        jobs_tx.send_replace(Some(Arc::new(job)));
    }
    tracing::error!("every watcher stopped; serving the last config");
}

/// Resolves when the proxies report something new; never without a stream
/// (or once it has stopped).
async fn reported(reports: &mut Option<watch::Receiver<coxswain_stream::Reports>>) {
    if let Some(receiver) = reports
        && receiver.changed().await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// One translation of the store's current state (published to the
/// dedicated pools when `stream` is given), plus the writer's job and the
/// reserved label keys each Gateway asked for (dropped).
pub fn translate_store(
    translator: &mut Translator,
    addresses: &mut AddressMemory,
    store: &Store,
    config: &ControllerConfig,
    mut stream: Option<&mut StreamFeed>,
    now: Timestamp,
) -> (Output, StatusJob, BTreeMap<ObjectKey, BTreeSet<String>>) {
    let filter = config.gateway_class_name.as_deref();
    let view = for_translation(store.snapshot(), filter);
    let classes = our_classes(&view, &config.controller_name, filter);
    let options = Options {
        controller_name: config.controller_name.as_str().into(),
        default_address: config.default_address,
        now: Time(now),
        ingress: config.ingress.clone(),
        dedicated_pools: config.pools.is_some(),
    };
    // Dedicated Gateways take no address from the pool: their listeners
    // bind the wildcard inside their pool's pods, their addresses are
    // their Service's.
    let dedicated = dedicated_gateways(&view, &options);
    let mut assigned = match &config.addresses {
        AddressMode::Pool(pool) => {
            let requests = pool_requests(&view, &classes, addresses, &dedicated);
            let assigned = allocate(pool, &requests);
            addresses.clone_from(&assigned);
            assigned
        }
        AddressMode::LoadBalancer { .. } => BTreeMap::new(),
    };
    for (key, gw) in our_gateways(&view, &classes) {
        if let Some(parameters) = dedicated.get(&key.to_string()) {
            let bind = pool_bind(gw, &parameters.spec, config.default_address);
            assigned.insert(key.clone(), bind);
        }
    }
    let mut output = translator.translate_with_addresses(&view, &options, &assigned);
    if let AddressMode::LoadBalancer { .. } = &config.addresses {
        overlay_load_balancer_addresses(&mut output.statuses, &view, &output.dedicated);
    }
    let (feedback, pool_unbound): (BTreeMap<String, StreamFeedback>, _) = match &mut stream {
        Some(feed) => feed.publish(&output),
        None => Default::default(),
    };
    overlay_pool_status(&mut output.statuses, &view, &output.dedicated, &feedback);
    mark_unbound(&mut output.statuses, &output.ir, &pool_unbound, &Time(now));
    let secrets = match &mut stream {
        Some(feed) => feed.secrets(&view, &output, std::time::SystemTime::now()),
        None => Vec::new(),
    };
    let plan = pool_plan::plan(
        &view,
        our_gateways(&view, &classes),
        &output,
        &config.addresses,
        config.pools.as_ref(),
    );
    let job = StatusJob {
        snapshot: Arc::new(view),
        statuses: Arc::new(output.statuses.clone()),
        services: plan.services,
        secrets,
        service_accounts: plan.service_accounts,
        deployments: plan.deployments,
        pod_disruption_budgets: plan.pod_disruption_budgets,
        teardowns: plan.teardowns,
        // Only where Gateways can be dedicated: the default RBAC grants no
        // writes to Gateways (patch would reach their spec too).
        gateway_labels: match config.pools {
            Some(_) => gateway_labels::plan(
                store.snapshot(),
                &classes,
                &config.controller_name,
                &output.statuses.gateways,
                |key| output.dedicated.contains_key(&key.to_string()),
            ),
            None => Vec::new(),
        },
    };
    (output, job, plan.reserved_labels)
}

/// Removes the listeners of `gateways` ("ns/name") from `ir`, and the
/// sockets left without a listener.
fn drop_gateways<V>(ir: &mut coxswain_ir::Config, gateways: &BTreeMap<String, V>) {
    if gateways.is_empty() {
        return;
    }
    for socket in &mut ir.sockets {
        socket
            .listeners
            .retain(|l| !gateways.contains_key(&l.gateway));
    }
    ir.sockets.retain(|s| !s.listeners.is_empty());
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
