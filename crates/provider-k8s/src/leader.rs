//! The Lease loop: every RENEW_PERIOD read the Lease and act on
//! [`lease::decide`], writing with the resourceVersion we read so two
//! replicas can never both win. Publishes "am I the leader" on a watch
//! channel; only the leader writes status.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until, timeout};

use crate::lease::{Leadership, RENEW_PERIOD, decide, next_spec, released};
use crate::metrics::Metrics;

#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// Who we are in `holderIdentity`: pod name, else hostname and pid.
    pub identity: String,
}

/// Pod name from the downward API, else `hostname-pid`.
pub fn default_identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.is_empty()
    {
        return pod;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "coxswain".to_string());
    format!("{host}-{}", std::process::id())
}

/// Starts the Lease loop on `tasks` (so it stops when they are dropped);
/// the receiver says whether we lead right now.
pub fn spawn(
    tasks: &mut JoinSet<()>,
    client: Client,
    config: LeaseConfig,
    metrics: Arc<Metrics>,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tasks.spawn(async move {
        let api: Api<Lease> = Api::namespaced(client, &config.namespace);
        let mut leadership = Leadership::default();
        let mut ticker = interval(RENEW_PERIOD);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let far = Instant::now() + RENEW_PERIOD * 1000;
        loop {
            let lapse = if leadership.is_leader(Instant::now()) {
                leadership.valid_until().unwrap_or(far)
            } else {
                far
            };
            tokio::select! {
                _ = ticker.tick() => {
                    let started = Instant::now();
                    match timeout(RENEW_PERIOD, try_hold(&api, &config)).await {
                        Ok(Ok(true)) => leadership.renewed(started),
                        Ok(Ok(false)) => leadership.lost(),
                        Ok(Err(error)) => tracing::warn!(%error, "lease update failed"),
                        Err(_) => tracing::warn!("lease update timed out"),
                    }
                }
                _ = sleep_until(lapse) => {}
            }
            let leading = leadership.is_leader(Instant::now());
            metrics.leader.store(leading, Ordering::Relaxed);
            let changed = tx.send_if_modified(|current| {
                let changed = *current != leading;
                *current = leading;
                changed
            });
            if changed {
                tracing::info!(identity = %config.identity, leading, "leadership changed");
            }
            if tx.is_closed() {
                return;
            }
        }
    });
    rx
}

/// One round: true when we hold the Lease after it.
async fn try_hold(api: &Api<Lease>, config: &LeaseConfig) -> Result<bool, kube::Error> {
    let current = api.get_opt(&config.name).await?;
    let now = Timestamp::now();
    let spec = current.as_ref().and_then(|l| l.spec.as_ref());
    let action = decide(spec, &config.identity, now);
    let Some(next) = next_spec(&action, spec, &config.identity, now) else {
        return Ok(false);
    };
    let params = PostParams::default();
    let written = match current {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(config.name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(next),
            };
            api.create(&params, &lease).await
        }
        Some(mut lease) => {
            // Keeps metadata.resourceVersion: a concurrent writer makes this 409.
            lease.spec = Some(next);
            api.replace(&config.name, &params, &lease).await
        }
    };
    match written {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Hands the Lease back if we hold it (graceful shutdown). Best effort:
/// a conflict or error just leaves it to expire.
pub async fn release(client: Client, config: &LeaseConfig) {
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let attempt = async {
        let Some(mut lease) = api.get_opt(&config.name).await? else {
            return Ok::<bool, kube::Error>(false);
        };
        let Some(spec) = released(lease.spec.as_ref(), &config.identity) else {
            return Ok(false);
        };
        lease.spec = Some(spec);
        api.replace(&config.name, &PostParams::default(), &lease)
            .await?;
        Ok(true)
    };
    match timeout(RENEW_PERIOD / 2, attempt).await {
        Ok(Ok(true)) => tracing::info!(identity = %config.identity, "lease released"),
        Ok(Ok(false)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "cannot release the lease"),
        Err(_) => tracing::warn!("releasing the lease timed out"),
    }
}
