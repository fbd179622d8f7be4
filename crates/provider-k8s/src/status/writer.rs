//! The status writer: while we lead, make every object's live status equal
//! to the merged desired one. A pass writes only what differs (ignoring
//! timestamps), with bounded concurrency and a timeout per write; failed
//! writes are retried by the next pass.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use coxswain_api::gw::httproutes::HttpRouteStatus;
use coxswain_api::{Kind, ObjectKey};
use coxswain_ir::RouteKind;
use coxswain_translate::{RouteStatus, api_kind};
use futures::StreamExt;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout};

pub use super::job::{StatusJob, WriterConfig};
use super::merge::{
    merge_backend_policy, merge_backend_tls_policy, merge_backend_traffic_policy,
    merge_client_traffic_policy, merge_filter, merge_gateway, merge_gateway_class,
    merge_listener_set, merge_route, same_ignoring_times,
};
use super::resources::ResourceWriter;
use super::settled::Settled;
use crate::metrics::Metrics;

type Write = Pin<Box<dyn Future<Output = Result<(), kube::Error>> + Send + 'static>>;

type Bounded = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

async fn bounded(write: Write, limit: Duration) -> Result<(), String> {
    match timeout(limit, write).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err("timed out".to_string()),
    }
}

/// What we last wrote per object: (resourceVersion it was based on, the
/// status). Stops a pass on a stale snapshot from rewriting the same thing.
type Written = HashMap<(&'static str, ObjectKey), (Option<String>, Value)>;

pub async fn run(
    client: Client,
    mut jobs: watch::Receiver<Option<Arc<StatusJob>>>,
    mut leader: watch::Receiver<bool>,
    config: WriterConfig,
    metrics: Arc<Metrics>,
) {
    let mut written = Written::new();
    let mut settled = Settled::default();
    let mut resources = ResourceWriter::new(client.clone(), &config);
    let mut retry_at: Option<Instant> = None;
    loop {
        let retry = retry_at.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            changed = jobs.changed() => if changed.is_err() { return },
            changed = leader.changed() => if changed.is_err() { return },
            _ = sleep_until(retry), if retry_at.is_some() => {}
        }
        retry_at = None;
        if !*leader.borrow_and_update() {
            // A new leader starts from what is live, not from our memory.
            written.clear();
            resources.forget();
            continue;
        }
        let Some(job) = jobs.borrow_and_update().clone() else {
            continue;
        };
        let mut failed = pass(&client, &job, &config, &metrics, &mut written, &mut settled).await;
        failed += resources.apply(&job, &metrics).await;
        if failed > 0 {
            retry_at = Some(Instant::now() + config.retry_after);
        }
    }
}

/// Queues the status writes of one namespaced policy kind: its
/// `status.ancestors` merged with other controllers' entries. The statuses
/// and the snapshot name the kind's field alike.
macro_rules! write_policies {
    ($plan:ident, $client:ident, $job:ident, $field:ident, $kind:literal, $merge:ident) => {
        for (key, desired) in &$job.statuses.$field {
            if let Some(live) = $job.snapshot.$field.get(key) {
                let merged = $merge(
                    live.status.as_ref(),
                    desired.clone(),
                    &$plan.config.controller_name,
                );
                let api = Api::namespaced($client.clone(), &key.namespace);
                $plan.write(
                    $kind,
                    key,
                    &**live,
                    live.status.as_ref(),
                    merged,
                    api,
                    |o, s| o.status = Some(s),
                );
            }
        }
    };
}

/// Queues the status writes of one Coxswain filter kind (its conditions
/// are ours alone).
macro_rules! write_filters {
    ($plan:ident, $client:ident, $job:ident, $field:ident, $kind:ident) => {
        for ((kind, key), desired) in &$job.statuses.filters {
            if *kind != Kind::$kind {
                continue;
            }
            if let Some(live) = $job.snapshot.$field.get(key) {
                let merged = merge_filter(
                    live.status.as_ref(),
                    desired.clone(),
                    &$plan.config.controller_name,
                );
                let api = Api::namespaced($client.clone(), &key.namespace);
                $plan.write(
                    kind.name(),
                    key,
                    &**live,
                    live.status.as_ref(),
                    merged,
                    api,
                    |o, s| o.status = Some(s),
                );
            }
        }
    };
}

/// One pass over every status; returns how many writes failed.
async fn pass(
    client: &Client,
    job: &StatusJob,
    config: &WriterConfig,
    metrics: &Metrics,
    written: &mut Written,
    settled: &mut Settled,
) -> usize {
    let snapshot = &job.snapshot;
    let mut plan = Plan {
        config,
        metrics,
        written,
        settled,
        writes: Vec::new(),
    };
    for (key, desired) in &job.statuses.gateway_classes {
        if let Some(live) = snapshot.gateway_classes.get(key) {
            let merged = merge_gateway_class(live.status.as_ref(), desired.clone());
            plan.write(
                "GatewayClass",
                key,
                &**live,
                live.status.as_ref(),
                merged,
                Api::all(client.clone()),
                |o, s| o.status = Some(s),
            );
        }
    }
    for (key, desired) in &job.statuses.gateways {
        if let Some(live) = snapshot.gateways.get(key) {
            let merged = merge_gateway(live.status.as_ref(), desired.clone());
            let api = Api::namespaced(client.clone(), &key.namespace);
            plan.write(
                "Gateway",
                key,
                &**live,
                live.status.as_ref(),
                merged,
                api,
                |o, s| o.status = Some(s),
            );
        }
    }
    for ((kind, key), desired) in &job.statuses.routes {
        let name = api_kind(*kind).name();
        let client = client.clone();
        match kind {
            RouteKind::Http => {
                plan.route(name, key, snapshot.http_routes.get(key), desired, client)
            }
            RouteKind::Grpc => {
                plan.route(name, key, snapshot.grpc_routes.get(key), desired, client)
            }
            RouteKind::Tls => plan.route(name, key, snapshot.tls_routes.get(key), desired, client),
            RouteKind::Tcp => plan.route(name, key, snapshot.tcp_routes.get(key), desired, client),
            RouteKind::Udp => plan.route(name, key, snapshot.udp_routes.get(key), desired, client),
            // Ingresses have no route status (see `statuses.ingresses`).
            RouteKind::Ingress => {}
        }
    }
    // An Ingress belongs to one class, so its status is ours alone: no merge.
    for (key, outcome) in &job.statuses.ingresses {
        if let Some(live) = snapshot.ingresses.get(key) {
            let api = Api::namespaced(client.clone(), &key.namespace);
            plan.write(
                "Ingress",
                key,
                &**live,
                live.status.as_ref(),
                outcome.status.clone(),
                api,
                |o, s| o.status = Some(s),
            );
        }
    }
    for (key, desired) in &job.statuses.listener_sets {
        if let Some(live) = snapshot.listener_sets.get(key) {
            let merged = merge_listener_set(live.status.as_ref(), desired.clone());
            let api = Api::namespaced(client.clone(), &key.namespace);
            plan.write(
                "ListenerSet",
                key,
                &**live,
                live.status.as_ref(),
                merged,
                api,
                |o, s| o.status = Some(s),
            );
        }
    }
    write_policies!(
        plan,
        client,
        job,
        backend_tls_policies,
        "BackendTLSPolicy",
        merge_backend_tls_policy
    );
    write_policies!(
        plan,
        client,
        job,
        backend_policies,
        "CoxswainBackendPolicy",
        merge_backend_policy
    );
    write_policies!(
        plan,
        client,
        job,
        backend_traffic_policies,
        "XBackendTrafficPolicy",
        merge_backend_traffic_policy
    );
    write_policies!(
        plan,
        client,
        job,
        client_traffic_policies,
        "ClientTrafficPolicy",
        merge_client_traffic_policy
    );
    write_filters!(plan, client, job, basic_auths, BasicAuth);
    write_filters!(plan, client, job, compressions, Compression);
    write_filters!(plan, client, job, external_auths, CoxswainExternalAuth);
    write_filters!(plan, client, job, ip_access_controls, IpAccessControl);
    write_filters!(plan, client, job, jwt_auths, JwtAuth);
    write_filters!(plan, client, job, path_rewrite_regexes, PathRewriteRegex);
    write_filters!(plan, client, job, rate_limits, RateLimit);
    write_filters!(plan, client, job, request_size_limits, RequestSizeLimit);
    plan.settled.end_pass();
    let writes = plan.writes;
    let limit = config.write_timeout;
    let mut bounded_writes: Vec<Bounded> = Vec::with_capacity(writes.len());
    for write in writes {
        bounded_writes.push(Box::pin(bounded(write, limit)));
    }
    let results: Vec<Result<(), String>> = futures::stream::iter(bounded_writes)
        .buffer_unordered(config.concurrency.max(1))
        .collect()
        .await;
    let mut failed = 0;
    for result in results {
        match result {
            Ok(()) => Metrics::add(&metrics.status_writes),
            Err(error) => {
                failed += 1;
                if error.contains("409") || error.contains("onflict") {
                    Metrics::add(&metrics.status_write_conflicts);
                } else {
                    tracing::warn!(%error, "status write failed; retrying on the next pass");
                }
                Metrics::add(&metrics.status_write_errors);
            }
        }
    }
    if failed > 0 {
        // We cannot tell which writes failed from here: forget them all,
        // so the next pass compares against the live objects again.
        written.clear();
    }
    failed
}

/// The writes one pass will make, and the bookkeeping deciding them.
struct Plan<'a> {
    config: &'a WriterConfig,
    metrics: &'a Metrics,
    written: &'a mut Written,
    /// Routes known to need no write (skipped without merging).
    settled: &'a mut Settled,
    writes: Vec<Write>,
}

impl Plan<'_> {
    /// Queues a status write of `merged` onto a copy of `live`, unless the
    /// live status already says the same or we already wrote it.
    #[allow(clippy::too_many_arguments)]
    fn write<K, S>(
        &mut self,
        kind: &'static str,
        key: &ObjectKey,
        live: &K,
        live_status: Option<&S>,
        merged: S,
        api: Api<K>,
        set_status: impl FnOnce(&mut K, S),
    ) where
        K: kube::Resource
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
        S: serde::Serialize,
    {
        let resource_version = &live.meta().resource_version;
        if should_write(
            kind,
            key,
            resource_version,
            live_status,
            &merged,
            self.metrics,
            self.written,
        ) {
            let mut object = live.clone();
            set_status(&mut object, merged);
            self.writes.push(replace_status(api, object, self.config));
        }
    }
}

/// A route kind's object: its status has the shape of [`HttpRouteStatus`].
trait RouteObject:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + serde::Serialize
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    type Status: serde::Serialize + serde::de::DeserializeOwned;
    fn status(&self) -> Option<&Self::Status>;
    fn set_status(&mut self, status: Self::Status);
}

macro_rules! route_objects {
    ($($kind:ty => $status:ty;)*) => {$(
        impl RouteObject for $kind {
            type Status = $status;
            fn status(&self) -> Option<&$status> {
                self.status.as_ref()
            }
            fn set_status(&mut self, status: $status) {
                self.status = Some(status);
            }
        }
    )*};
}

route_objects! {
    coxswain_api::HttpRoute => coxswain_api::gw::httproutes::HttpRouteStatus;
    coxswain_api::GrpcRoute => coxswain_api::gw::grpcroutes::GrpcRouteStatus;
    coxswain_api::TlsRoute => coxswain_api::gw::tlsroutes::TlsRouteStatus;
    coxswain_api::TcpRoute => coxswain_api::gw::tcproutes::TcpRouteStatus;
    coxswain_api::UdpRoute => coxswain_api::gw::udproutes::UdpRouteStatus;
}

/// Converts between status types of identical JSON shape.
fn reshape<A: serde::Serialize, B: serde::de::DeserializeOwned>(a: &A) -> Option<B> {
    serde_json::to_value(a)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

impl Plan<'_> {
    /// Queues the merged status of a route of any kind.
    fn route<K: RouteObject>(
        &mut self,
        kind: &'static str,
        key: &ObjectKey,
        live: Option<&Arc<K>>,
        desired: &Arc<RouteStatus>,
        client: Client,
    ) {
        let Some(live) = live else {
            return;
        };
        if self.settled.still(kind, key, live, desired) {
            Metrics::add(&self.metrics.status_writes_skipped);
            return;
        }
        let live_status: Option<HttpRouteStatus> = live.status().and_then(reshape);
        let merged = merge_route(
            live_status.as_ref(),
            desired.to_api(),
            &self.config.controller_name,
        );
        let Some(merged) = reshape::<_, K::Status>(&merged) else {
            return;
        };
        if same_ignoring_times(live.status(), &merged) {
            Metrics::add(&self.metrics.status_writes_skipped);
            self.settled.record(kind, key, live, desired);
            return;
        }
        let api = Api::namespaced(client, &key.namespace);
        self.write(kind, key, &**live, live.status(), merged, api, |o, s| {
            o.set_status(s)
        });
    }
}

fn should_write<T: serde::Serialize>(
    kind: &'static str,
    key: &ObjectKey,
    resource_version: &Option<String>,
    live: Option<&T>,
    merged: &T,
    metrics: &Metrics,
    written: &mut Written,
) -> bool {
    if same_ignoring_times(live, merged) {
        Metrics::add(&metrics.status_writes_skipped);
        return false;
    }
    let value = serde_json::to_value(merged).unwrap_or(Value::Null);
    let id = (kind, key.clone());
    if written.get(&id) == Some(&(resource_version.clone(), value.clone())) {
        return false; // already written; waiting for the watch to catch up
    }
    written.insert(id, (resource_version.clone(), value));
    true
}

fn replace_status<K>(api: Api<K>, object: K, config: &WriterConfig) -> Write
where
    K: kube::Resource
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let params = PostParams {
        field_manager: Some(config.field_manager.clone()),
        ..PostParams::default()
    };
    Box::pin(async move {
        let name = object.meta().name.clone().unwrap_or_default();
        api.replace_status(&name, &params, &object).await.map(drop)
    })
}
