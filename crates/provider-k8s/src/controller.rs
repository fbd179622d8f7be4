//! The controller loop: watch -> coalesce -> translate -> dataplane, and
//! hand the statuses to the writer (which acts only while we lead).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_ir::UnboundSocket;
use coxswain_translate::{IngressOptions, Options, Output, Translator, mark_unbound};
use kube::Client;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::address_pool::allocate;
use crate::addresses::{
    AddressMemory, AddressMode, overlay_load_balancer_addresses, pool_requests,
};
use crate::coalesce::{CAP, QUIET, gather};
use crate::gateway_service::{desired_service, desired_service_account, served_ports};
use crate::leader::{self, LeaseConfig};
use crate::metrics::Metrics;
use crate::ours::{for_translation, our_classes, our_gateways};
use crate::status::{StatusJob, WriterConfig, writer};
use crate::store::Store;

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
    /// When the burst of changes that led to this config began.
    pub first_change: Instant,
    pub translate: Duration,
    /// False when the IR equals the one applied before.
    pub ir_changed: bool,
}

/// Runs until every watcher has stopped (they retry forever, so in practice
/// until the process exits). The dataplane keeps its last config after.
pub async fn run<D: Dataplane>(
    client: Client,
    config: ControllerConfig,
    dataplane: D,
    metrics: Arc<Metrics>,
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
    while let Some(change) = changes.recv().await {
        let first = Instant::now();
        store.apply(change);
        if gather(&mut changes, &mut store, first, QUIET, CAP)
            .await
            .is_none()
        {
            break;
        }
        if !store.ready() {
            continue; // no partial config: wait for every kind's first list
        }
        if !announced_ready {
            tracing::info!("initial list of every kind complete");
            announced_ready = true;
        }
        let translate_start = Instant::now();
        let now = Timestamp::now();
        let (output, mut job) =
            translate_store(&mut translator, &mut addresses, &store, &config, now);
        let ir_changed = served.as_ref() != Some(&output.ir);
        let timing = Timing {
            first_change: first,
            translate: translate_start.elapsed(),
            ir_changed,
        };
        Metrics::add(&metrics.translations);
        let unbound = dataplane.apply(&output, timing).await;
        mark_unbound(&mut job.statuses, &output.ir, &unbound, &Time(now));
        ingress_problems.update(&job.statuses);
        if ir_changed {
            served = Some(output.ir.clone());
        }
        jobs_tx.send_replace(Some(Arc::new(job)));
    }
    tracing::error!("every watcher stopped; serving the last config");
}

/// One translation of the store's current state, plus the writer's job.
pub fn translate_store(
    translator: &mut Translator,
    addresses: &mut AddressMemory,
    store: &Store,
    config: &ControllerConfig,
    now: Timestamp,
) -> (Output, StatusJob) {
    let filter = config.gateway_class_name.as_deref();
    let view = for_translation(store.snapshot(), filter);
    let classes = our_classes(&view, &config.controller_name, filter);
    let assigned = match &config.addresses {
        AddressMode::Pool(pool) => {
            let assigned = allocate(pool, &pool_requests(&view, &classes, addresses));
            addresses.clone_from(&assigned);
            assigned
        }
        AddressMode::LoadBalancer { .. } => BTreeMap::new(),
    };
    let options = Options {
        controller_name: config.controller_name.clone(),
        default_address: config.default_address,
        now: Time(now),
        ingress: config.ingress.clone(),
    };
    let mut output = translator.translate_with_addresses(&view, &options, &assigned);
    let mut job = StatusJob::default();
    if let AddressMode::LoadBalancer { .. } = &config.addresses {
        overlay_load_balancer_addresses(&mut output.statuses, &view);
    }
    for (key, gw) in our_gateways(&view, &classes) {
        // Every Gateway gets an identity ServiceAccount carrying its
        // spec.infrastructure labels and annotations (GEP-1867); the
        // LoadBalancer mode also gets the Service that gives it an address.
        job.service_accounts.extend(desired_service_account(gw));
        if let AddressMode::LoadBalancer { proxy_selector } = &config.addresses {
            let served = served_ports(&output.ir, key);
            job.services
                .extend(desired_service(gw, proxy_selector, &served));
        }
    }
    job.statuses = output.statuses.clone();
    job.snapshot = Arc::new(view);
    (output, job)
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
