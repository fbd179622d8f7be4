//! The controller's side of the config stream: starts the hub (every
//! replica serves it; only the leader's sessions send), publishes each
//! dedicated Gateway's share of every translation, issues the pools'
//! credentials, and turns the proxies' answers into [`StreamFeedback`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use coxswain_api::{ObjectKey, Secret, Snapshot};
use coxswain_ir::UnboundSocket;
use coxswain_stream::{
    Encoder, Hub, Published, Reports, Resources, ServingError, serve, serving_config,
};
use coxswain_translate::Output;
use kube::Client;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::pool::PoolSettings;
use crate::pool_status::StreamFeedback;
use crate::stream_ca;
use crate::stream_credentials::ProxyCredentials;

pub struct StreamFeed {
    credentials: ProxyCredentials,
    published: watch::Sender<Arc<Published>>,
    /// Each Gateway's encoder (which reuses what did not change) and last
    /// resources (kept, same `Arc`, while equal).
    slices: BTreeMap<String, (Encoder, Arc<Resources>)>,
    reports: watch::Receiver<Reports>,
}

impl StreamFeed {
    /// Loads (or creates) the authority, then serves the stream on
    /// `listener` in `tasks`; sessions send only while `leading`. Fails
    /// only when no certificate can be issued for the server name.
    pub async fn start(
        tasks: &mut JoinSet<()>,
        client: &Client,
        namespace: &str,
        settings: &PoolSettings,
        listener: TcpListener,
        leading: watch::Receiver<bool>,
    ) -> Result<StreamFeed, ServingError> {
        let authority = Arc::new(stream_ca::authority(client, namespace).await);
        let (published, configs) = watch::channel(Arc::new(Published::new()));
        let (reports_tx, reports) = watch::channel(Reports::new());
        let hub = Hub::new(configs, leading, reports_tx);
        let serving = serving_config(&authority, &settings.stream_server_name, SystemTime::now())?;
        let (tls_tx, tls) = watch::channel(serving);
        if let Ok(address) = listener.local_addr() {
            tracing::info!(%address, server_name = %settings.stream_server_name, "config stream listening");
        }
        tasks.spawn(serve(listener, tls, hub));
        tasks.spawn(coxswain_stream::serving::renew(
            authority.clone(),
            settings.stream_server_name.clone(),
            tls_tx,
        ));
        Ok(StreamFeed {
            credentials: ProxyCredentials::new(authority),
            published,
            slices: BTreeMap::new(),
            reports,
        })
    }

    /// Wakes when a proxy reports something new.
    pub fn reports(&self) -> watch::Receiver<Reports> {
        self.reports.clone()
    }

    /// Publishes each dedicated Gateway's share of `output.ir` (the whole
    /// IR, before the shared proxies' cut) and returns what its pool said
    /// of it, with the sockets a proxy could not bind.
    pub fn publish(
        &mut self,
        output: &Output,
    ) -> (BTreeMap<String, StreamFeedback>, Vec<UnboundSocket>) {
        let mut slices = BTreeMap::new();
        for gateway in output.dedicated.keys() {
            let slice = output.ir.gateway_slice(gateway);
            let (mut encoder, previous) = match self.slices.remove(gateway) {
                Some((encoder, previous)) => (encoder, Some(previous)),
                None => (Encoder::default(), None),
            };
            let resources = match (encoder.encode(&slice), previous) {
                (Ok(encoded), Some(previous)) if *previous == encoded => previous,
                (Ok(encoded), _) => Arc::new(encoded),
                (Err(e), _) => {
                    tracing::error!(%gateway, error = %e, "config stream: cannot encode the config");
                    continue;
                }
            };
            slices.insert(gateway.clone(), (encoder, resources));
        }
        self.slices = slices;
        let published: Published = self
            .slices
            .iter()
            .map(|(gateway, (_, resources))| (gateway.clone(), resources.clone()))
            .collect();
        self.published.send_if_modified(|current| {
            let changed = **current != published;
            if changed {
                *current = Arc::new(published.clone());
            }
            changed
        });
        let reports = self.reports.borrow();
        let mut feedback = BTreeMap::new();
        let mut unbound = Vec::new();
        for (gateway, (_, resources)) in &self.slices {
            let Some(report) = reports.get(gateway) else {
                feedback.insert(gateway.clone(), StreamFeedback::default());
                continue;
            };
            let version = resources.version();
            feedback.insert(gateway.clone(), feedback_of(report, &version));
            if report.acked.as_deref() == Some(version.as_str()) {
                unbound.extend(report.unbound.iter().cloned());
            }
        }
        (feedback, unbound)
    }

    /// The Secrets the dedicated Gateways' pools mount.
    pub fn secrets(
        &mut self,
        snapshot: &Snapshot,
        output: &Output,
        now: SystemTime,
    ) -> Vec<Secret> {
        let gateways = output.dedicated.iter().filter_map(|(key, parameters)| {
            let (namespace, name) = key.split_once('/')?;
            let key = ObjectKey::new(namespace, name);
            let (key, gw) = snapshot.gateways.get_key_value(&key)?;
            Some((key, &**gw, &parameters.spec))
        });
        self.credentials.desired(snapshot, gateways, now)
    }
}

/// A pool serves once any proxy acknowledged a config (an older one
/// still serves while the newest is on its way); a rejection counts only
/// for the version published now.
pub fn feedback_of(report: &coxswain_stream::PoolReport, version: &str) -> StreamFeedback {
    StreamFeedback {
        acked: report.acked.is_some(),
        nack: report
            .rejected
            .as_ref()
            .filter(|(rejected, _)| rejected == version)
            .map(|(_, error)| error.clone()),
    }
}
