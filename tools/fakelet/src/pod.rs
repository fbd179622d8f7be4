//! One pod's life on this node: network, volumes, containers, status, and
//! teardown when it is deleted (or the fakelet stops).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, Client, ResourceExt};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use crate::container::{self, Shared};
use crate::env::PodFacts;
use crate::image_map::ImageMap;
use crate::ipam::IpPool;
use crate::netns::{self, PodNetwork};
use crate::objects;
use crate::prepare::{self, PodPlan};
use crate::status::{ContainerRuntime, PodRuntime, RunState};

const RETRY: Duration = Duration::from_secs(2);

/// What every pod worker shares.
pub struct NodeCtx {
    pub client: Client,
    pub node_name: String,
    pub node_ip: String,
    pub bridge: String,
    pub pool: Mutex<IpPool>,
    pub images: ImageMap,
    pub state_dir: PathBuf,
    pub fakelet_exe: PathBuf,
    pub max_grace: Duration,
}

impl NodeCtx {
    pub fn netns_records(&self) -> PathBuf {
        self.state_dir.join("netns")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// deletionTimestamp set: stop, clean up, then remove the object.
    Deleted,
    /// The object is gone already.
    Gone,
    /// The fakelet is stopping: clean up, leave the object.
    Shutdown,
}

struct Events {
    pod: watch::Receiver<Option<Pod>>,
    shutdown: watch::Receiver<bool>,
}

impl Events {
    fn current_end(&self) -> Option<End> {
        if *self.shutdown.borrow() {
            return Some(End::Shutdown);
        }
        match &*self.pod.borrow() {
            None => Some(End::Gone),
            Some(pod) if pod.metadata.deletion_timestamp.is_some() => Some(End::Deleted),
            Some(_) => None,
        }
    }

    /// Waits up to `limit` (forever with `None`) for the pod's end.
    async fn end_within(&mut self, limit: Option<Duration>) -> Option<End> {
        let deadline = limit.map(|l| tokio::time::Instant::now() + l);
        loop {
            if let Some(end) = self.current_end() {
                return Some(end);
            }
            let sleep = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = self.pod.changed() => if changed.is_err() { return Some(End::Gone) },
                changed = self.shutdown.changed() => if changed.is_err() { return Some(End::Shutdown) },
                () = sleep => return None,
            }
        }
    }
}

fn pod_dir(ctx: &NodeCtx, pod: &Pod) -> PathBuf {
    let ns = pod.namespace().unwrap_or_default();
    let uid = pod.uid().unwrap_or_default();
    ctx.state_dir
        .join("pods")
        .join(format!("{ns}_{}_{uid}", pod.name_any()))
}

/// Publishes the runtime state as pod status whenever it changes.
async fn report_status(api: Api<Pod>, name: String, shared: Shared) {
    loop {
        shared.changed.notified().await;
        let status = {
            let mut runtime = shared.runtime.lock().unwrap_or_else(|e| e.into_inner());
            runtime.report(jiff::Timestamp::now())
        };
        let patch = serde_json::json!({ "status": status });
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(pod = %name, "status update failed: {e}");
            tokio::time::sleep(RETRY).await;
            shared.changed.notify_one();
        }
    }
}

fn set_all_waiting(shared: &Shared, reason: &str, message: &str) {
    shared.update(|rt| {
        for c in &mut rt.containers {
            if !matches!(&c.state, RunState::Waiting { reason, .. } if reason == "ErrImagePull") {
                c.state = RunState::waiting(reason, Some(message.to_string()));
            }
        }
    });
}

pub async fn run_pod(
    ctx: Arc<NodeCtx>,
    pod_rx: watch::Receiver<Option<Pod>>,
    shutdown: watch::Receiver<bool>,
) {
    let Some(pod) = pod_rx.borrow().clone() else {
        return;
    };
    let mut events = Events {
        pod: pod_rx,
        shutdown,
    };
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    if events.current_end() == Some(End::Deleted) {
        delete_now(&api, &pod).await;
        return;
    }
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.clone())
        .unwrap_or_default();
    let mut runtime = PodRuntime::new(
        &ctx.node_ip,
        containers
            .iter()
            .map(|c| ContainerRuntime::new(&c.name, c.image.as_deref().unwrap_or("")))
            .collect(),
    );
    for c in &containers {
        let image = c.image.as_deref().unwrap_or("");
        if ctx.images.rule_for(image).is_none()
            && let Some(rt) = runtime.container_mut(&c.name)
        {
            rt.state = RunState::waiting("ErrImagePull", Some(prepare::unmapped_message(image)));
        }
    }
    let shared = Shared {
        runtime: Arc::new(Mutex::new(runtime)),
        changed: Arc::new(Notify::new()),
    };
    let reporter = tokio::spawn(report_status(api.clone(), name.clone(), shared.clone()));
    shared.changed.notify_one();

    let dir = pod_dir(&ctx, &pod);
    let end = match start_pod(&ctx, &pod, &shared, &dir, &mut events).await {
        Ok((network, mut supervisors, stop)) => {
            let end = events.end_within(None).await.unwrap_or(End::Shutdown);
            // Stop reporting first: stopping processes is not a pod failure.
            reporter.abort();
            let _ = stop.send(true);
            let cap = ctx.max_grace + Duration::from_secs(5);
            let _ = tokio::time::timeout(cap, async {
                while supervisors.join_next().await.is_some() {}
            })
            .await;
            supervisors.abort_all();
            netns::remove(&ctx.netns_records(), &network.netns).await;
            release_ip(&ctx, &network);
            end
        }
        Err(end) => end,
    };
    reporter.abort();
    let _ = tokio::fs::remove_dir_all(&dir).await;
    tracing::info!(pod = %name, namespace = %namespace, ?end, "pod stopped");
    if end == End::Deleted {
        delete_now(&api, &pod).await;
    }
}

fn release_ip(ctx: &NodeCtx, network: &PodNetwork) {
    ctx.pool
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .release(network.ip);
}

type Started = (PodNetwork, JoinSet<()>, watch::Sender<bool>);

/// Network, then objects, then processes. Returns the end instead when the
/// pod goes away first.
async fn start_pod(
    ctx: &Arc<NodeCtx>,
    pod: &Pod,
    shared: &Shared,
    dir: &std::path::Path,
    events: &mut Events,
) -> Result<Started, End> {
    let uid = pod.uid().unwrap_or_default();
    // Keep the address the pod had before a fakelet restart, if still free.
    let mut previous: Option<std::net::Ipv4Addr> = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .and_then(|ip| ip.parse().ok());
    let network = loop {
        let allocated = {
            let mut pool = ctx.pool.lock().unwrap_or_else(|e| e.into_inner());
            match previous.take() {
                Some(ip) if pool.reserve(ip) => Some(ip),
                _ => pool.allocate(),
            }
        };
        let attempt = match allocated {
            Some(ip) => {
                let cidr = ctx.pool.lock().unwrap_or_else(|e| e.into_inner()).cidr();
                let created = netns::create(
                    &ctx.netns_records(),
                    &ctx.node_name,
                    &uid,
                    ip,
                    cidr,
                    &ctx.bridge,
                )
                .await;
                if created.is_err() {
                    ctx.pool
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .release(ip);
                }
                created
            }
            None => Err(anyhow::anyhow!("no free pod IP left in the pod CIDR")),
        };
        match attempt {
            Ok(network) => break network,
            Err(e) => {
                tracing::warn!(pod = %pod.name_any(), "network setup failed: {e:#}");
                set_all_waiting(shared, "ContainerCreating", &format!("network: {e:#}"));
                if let Some(end) = events.end_within(Some(RETRY)).await {
                    return Err(end);
                }
            }
        }
    };
    shared.update(|rt| rt.pod_ip = Some(network.ip));
    match run_containers(ctx, pod, shared, dir, &network, events).await {
        Ok((supervisors, stop)) => Ok((network, supervisors, stop)),
        Err(end) => {
            netns::remove(&ctx.netns_records(), &network.netns).await;
            release_ip(ctx, &network);
            Err(end)
        }
    }
}

async fn run_containers(
    ctx: &Arc<NodeCtx>,
    pod: &Pod,
    shared: &Shared,
    dir: &std::path::Path,
    network: &PodNetwork,
    events: &mut Events,
) -> Result<(JoinSet<()>, watch::Sender<bool>), End> {
    let spec = pod.spec.clone().unwrap_or_default();
    let grace = u64::try_from(spec.termination_grace_period_seconds.unwrap_or(30))
        .map(Duration::from_secs)
        .unwrap_or_default()
        .min(ctx.max_grace);
    let plan = PodPlan {
        pod,
        facts: PodFacts {
            name: pod.name_any(),
            namespace: pod.namespace().unwrap_or_default(),
            uid: pod.uid().unwrap_or_default(),
            node_name: ctx.node_name.clone(),
            pod_ip: network.ip.to_string(),
            host_ip: ctx.node_ip.clone(),
            service_account: spec.service_account_name.clone().unwrap_or_default(),
        },
        pod_dir: dir.to_path_buf(),
        netns: network.netns.clone(),
        pod_ip: network.ip,
        grace,
        fakelet_exe: ctx.fakelet_exe.clone(),
    };
    let refs = objects::referenced(pod);
    let namespace = plan.facts.namespace.clone();
    let specs = loop {
        let prepared = match objects::fetch(&ctx.client, &namespace, &refs).await {
            Ok(objs) => prepare::volume_files(pod, &objs)
                .and_then(|vols| Ok((vols, prepare::container_specs(&plan, &ctx.images, &objs)?)))
                .map_err(|missing| missing.to_string()),
            Err(e) => Err(format!("reading referenced objects: {e}")),
        };
        match prepared {
            Ok((vols, specs)) => match prepare::write_volumes(dir, &vols) {
                Ok(()) => break specs,
                Err(e) => set_all_waiting(shared, "ContainerCreating", &format!("volumes: {e}")),
            },
            Err(message) => set_all_waiting(shared, "ContainerCreating", &message),
        }
        if let Some(end) = events.end_within(Some(RETRY)).await {
            return Err(end);
        }
    };
    let (stop, stop_rx) = watch::channel(false);
    let mut supervisors = JoinSet::new();
    for spec in specs {
        supervisors.spawn(container::supervise(spec, shared.clone(), stop_rx.clone()));
    }
    Ok((supervisors, stop))
}

async fn delete_now(api: &Api<Pod>, pod: &Pod) {
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.uid(),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&pod.name_any(), &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
        Err(e) => tracing::warn!(pod = %pod.name_any(), "final delete failed: {e}"),
    }
}
