//! Watches pods: binds unscheduled ones to this node (there is no
//! scheduler) and gives every pod bound here its own worker.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::pod::{NodeCtx, run_pod};

/// Binds every pod without a nodeName to `node`, until `shutdown`.
pub async fn bind_unscheduled(ctx: Arc<NodeCtx>, mut shutdown: watch::Receiver<bool>) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields("spec.nodeName=");
    let mut stream = watcher(api, config).default_backoff().boxed();
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = shutdown.changed() => return,
        };
        let pod = match event {
            Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => pod,
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                tracing::warn!("watching unscheduled pods: {e}");
                continue;
            }
            None => return,
        };
        let unbound = pod.spec.as_ref().is_some_and(|s| s.node_name.is_none());
        if unbound && pod.metadata.deletion_timestamp.is_none() {
            bind(&ctx, &pod).await;
        }
    }
}

async fn bind(ctx: &NodeCtx, pod: &Pod) {
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.name_any()),
            namespace: Some(namespace.clone()),
            uid: pod.uid(),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(ctx.node_name.clone()),
            ..Default::default()
        },
    };
    let result: kube::Result<serde_json::Value> = api
        .create_subresource("binding", &pod.name_any(), &PostParams::default(), &binding)
        .await;
    match result {
        Ok(_) => tracing::info!(pod = %pod.name_any(), %namespace, "bound"),
        // Gone or bound meanwhile (a re-list can replay stale pods).
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
            tracing::debug!(pod = %pod.name_any(), %namespace, "not bound: {}", status.message)
        }
        Err(e) => tracing::warn!(pod = %pod.name_any(), %namespace, "bind failed: {e}"),
    }
}

/// Runs a worker per pod bound to this node; returns on shutdown once every
/// worker has cleaned up.
pub async fn run_node_pods(ctx: Arc<NodeCtx>, mut shutdown: watch::Receiver<bool>) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", ctx.node_name));
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut senders: HashMap<String, watch::Sender<Option<Pod>>> = HashMap::new();
    let mut workers = JoinSet::new();
    // Pods seen during a re-list; the rest vanished while we were not looking.
    let mut relisted: HashSet<String> = HashSet::new();
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = shutdown.changed() => break,
            Some(_) = workers.join_next(), if !workers.is_empty() => continue,
        };
        match event {
            Some(Ok(watcher::Event::Init)) => relisted.clear(),
            Some(Ok(watcher::Event::InitApply(pod))) => {
                relisted.insert(pod.uid().unwrap_or_default());
                dispatch(&ctx, &shutdown, &mut senders, &mut workers, pod);
            }
            Some(Ok(watcher::Event::InitDone)) => {
                senders.retain(|uid, sender| {
                    let keep = relisted.contains(uid);
                    if !keep {
                        let _ = sender.send(None);
                    }
                    keep
                });
            }
            Some(Ok(watcher::Event::Apply(pod))) => {
                dispatch(&ctx, &shutdown, &mut senders, &mut workers, pod)
            }
            Some(Ok(watcher::Event::Delete(pod))) => {
                if let Some(sender) = senders.remove(&pod.uid().unwrap_or_default()) {
                    let _ = sender.send(None);
                }
            }
            Some(Err(e)) => tracing::warn!("watching this node's pods: {e}"),
            None => break,
        }
    }
    // Workers see the shutdown themselves; wait for their cleanup.
    while workers.join_next().await.is_some() {}
}

fn dispatch(
    ctx: &Arc<NodeCtx>,
    shutdown: &watch::Receiver<bool>,
    senders: &mut HashMap<String, watch::Sender<Option<Pod>>>,
    workers: &mut JoinSet<()>,
    pod: Pod,
) {
    let uid = pod.uid().unwrap_or_default();
    if let Some(sender) = senders.get(&uid) {
        // A finished worker no longer listens; that is fine.
        let _ = sender.send(Some(pod));
        return;
    }
    let (sender, receiver) = watch::channel(Some(pod));
    senders.insert(uid, sender);
    workers.spawn(run_pod(ctx.clone(), receiver, shutdown.clone()));
}
