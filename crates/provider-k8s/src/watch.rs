//! One kube-runtime watcher per kind, feeding [`Change`]s to the controller
//! (for some kinds only the objects with our label: [`label_selector`]).
//! Watchers reconnect with a short capped backoff ([`ReconnectBackoff`]);
//! while the API server is gone nothing changes, so the last good config
//! keeps serving.

use coxswain_api::{ApiObject, Kind, KindVisitor, Object, ObjectKey};
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;

use crate::backoff::ReconnectBackoff;
use crate::labels::{MANAGED_BY, MANAGED_BY_LABEL};
use crate::store::{Change, Seen};

/// Starts one watcher per kind of the kinds table; they stop when the
/// receiver is dropped.
pub fn spawn_all(client: &Client, changes: UnboundedSender<Seen>) -> JoinSet<()> {
    let mut set = JoinSet::new();
    for kind in Kind::ALL {
        kind.visit(Spawn {
            set: &mut set,
            client,
            changes: &changes,
        });
    }
    set
}

struct Spawn<'a> {
    set: &'a mut JoinSet<()>,
    client: &'a Client,
    changes: &'a UnboundedSender<Seen>,
}

impl KindVisitor for Spawn<'_> {
    type Output = ();
    fn visit<K: ApiObject>(self, kind: Kind, wrap: fn(K) -> Object) {
        spawn(self.set, self.client, self.changes, kind, wrap);
    }
}

/// Kinds watched only in part, by label: of the Deployments, only the
/// proxy pools we provision (not every Deployment of the cluster).
pub fn label_selector(kind: Kind) -> Option<String> {
    match kind {
        Kind::Deployment => Some(format!("{MANAGED_BY_LABEL}={MANAGED_BY}")),
        _ => None,
    }
}

fn spawn<K: ApiObject>(
    set: &mut JoinSet<()>,
    client: &Client,
    changes: &UnboundedSender<Seen>,
    kind: Kind,
    wrap: fn(K) -> Object,
) {
    let api: Api<K> = Api::all(client.clone());
    let changes = changes.clone();
    set.spawn(async move {
        // Default config: paginated list then watch (no streaming lists).
        let mut config = watcher::Config::default();
        if let Some(selector) = label_selector(kind) {
            config = config.labels(&selector);
        }
        let stream = watcher::watcher(api, config).backoff(ReconnectBackoff::default());
        let mut stream = std::pin::pin!(stream);
        let mut relist: Vec<Object> = Vec::new();
        let mut missing = false;
        let slim = |mut object: K| {
            // Managed fields are large and never read.
            object.meta_mut().managed_fields = None;
            let mut object = wrap(object);
            coxswain_api::compact(&mut object);
            object
        };
        while let Some(event) = stream.next().await {
            let change = match event {
                Ok(Event::Init) => {
                    relist.clear();
                    continue;
                }
                Ok(Event::InitApply(object)) => {
                    relist.push(slim(object));
                    continue;
                }
                Ok(Event::InitDone) => {
                    tracing::debug!(kind = kind.name(), objects = relist.len(), "listed");
                    missing = false;
                    Change::Replace(kind, std::mem::take(&mut relist))
                }
                Ok(Event::Apply(object)) => Change::Apply(slim(object)),
                Ok(Event::Delete(object)) => Change::Delete(kind, ObjectKey::of(object.meta())),
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                    if status.is_not_found() =>
                {
                    // The kind's CRD is not installed: there are none of
                    // them, which must not keep every other kind from being
                    // served. The watcher keeps retrying, so installing
                    // the CRD later brings them in.
                    if missing {
                        continue;
                    }
                    missing = true;
                    tracing::warn!(kind = kind.name(), "resource not served by the API server (CRD not installed?); treating it as empty");
                    Change::Replace(kind, Vec::new())
                }
                Err(error) => {
                    tracing::warn!(kind = kind.name(), %error, "watch failed; retrying with backoff");
                    continue;
                }
            };
            if changes.send((tokio::time::Instant::now(), change)).is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_deployments_are_watched() {
        assert_eq!(
            label_selector(Kind::Deployment).as_deref(),
            Some("app.kubernetes.io/managed-by=coxswain")
        );
        // The pool Deployments carry it (what the selector finds).
        let labels = crate::labels::pool_labels("gw");
        assert_eq!(labels[MANAGED_BY_LABEL], MANAGED_BY);
        let whole: Vec<Kind> = Kind::ALL
            .iter()
            .copied()
            .filter(|k| label_selector(*k).is_some())
            .collect();
        assert_eq!(
            whole,
            [Kind::Deployment],
            "every other kind is watched whole"
        );
    }
}
