//! One kube-runtime watcher per kind, feeding [`Change`]s to the controller.
//! Watchers reconnect with a short capped backoff ([`ReconnectBackoff`]);
//! while the API server is gone nothing changes, so the last good config
//! keeps serving.

use std::fmt::Debug;
use std::sync::Arc;

use coxswain_api::{
    ConfigMap, EndpointSlice, Gateway, GatewayClass, HttpRoute, Namespace, Object, ObjectKey,
    ReferenceGrant, Secret, Service,
};
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;

use crate::backoff::ReconnectBackoff;
use crate::store::Change;

/// Starts every watcher; they stop when the receiver is dropped.
pub fn spawn_all(client: &Client, changes: UnboundedSender<Change>) -> JoinSet<()> {
    let mut set = JoinSet::new();
    spawn::<GatewayClass>(&mut set, client, &changes, "GatewayClass", |o| {
        Object::GatewayClass(Arc::new(o))
    });
    spawn::<Gateway>(&mut set, client, &changes, "Gateway", |o| {
        Object::Gateway(Arc::new(o))
    });
    spawn::<HttpRoute>(&mut set, client, &changes, "HTTPRoute", |o| {
        Object::HttpRoute(Arc::new(o))
    });
    spawn::<ReferenceGrant>(&mut set, client, &changes, "ReferenceGrant", |o| {
        Object::ReferenceGrant(Arc::new(o))
    });
    spawn::<Service>(&mut set, client, &changes, "Service", |o| {
        Object::Service(Arc::new(o))
    });
    spawn::<EndpointSlice>(&mut set, client, &changes, "EndpointSlice", |o| {
        Object::EndpointSlice(Arc::new(o))
    });
    spawn::<Namespace>(&mut set, client, &changes, "Namespace", |o| {
        Object::Namespace(Arc::new(o))
    });
    spawn::<Secret>(&mut set, client, &changes, "Secret", |o| {
        Object::Secret(Arc::new(o))
    });
    spawn::<ConfigMap>(&mut set, client, &changes, "ConfigMap", |o| {
        Object::ConfigMap(Arc::new(o))
    });
    set
}

fn spawn<K>(
    set: &mut JoinSet<()>,
    client: &Client,
    changes: &UnboundedSender<Change>,
    kind: &'static str,
    wrap: fn(K) -> Object,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    let changes = changes.clone();
    set.spawn(async move {
        // Default config: paginated list then watch (no streaming lists).
        let stream =
            watcher::watcher(api, watcher::Config::default()).backoff(ReconnectBackoff::default());
        let mut stream = std::pin::pin!(stream);
        let mut relist: Vec<Object> = Vec::new();
        let slim = |mut object: K| {
            // Managed fields are large and never read.
            object.meta_mut().managed_fields = None;
            wrap(object)
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
                    tracing::debug!(kind, objects = relist.len(), "listed");
                    Change::Replace(kind, std::mem::take(&mut relist))
                }
                Ok(Event::Apply(object)) => Change::Apply(slim(object)),
                Ok(Event::Delete(object)) => Change::Delete(kind, ObjectKey::of(object.meta())),
                Err(error) => {
                    tracing::warn!(kind, %error, "watch failed; retrying with backoff");
                    continue;
                }
            };
            if changes.send(change).is_err() {
                return;
            }
        }
    });
}
