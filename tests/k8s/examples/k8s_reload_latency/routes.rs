//! The benchmark's HTTPRoutes, written straight to the API server with
//! kube's client (one kept-alive HTTPS connection for the timed writes, so
//! no kubectl process start is on the clock).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

pub const NAMESPACE: &str = "coxswain-demo";
const GATEWAY: &str = "demo";
/// Parallel POSTs while loading the routes.
const CREATE_CONCURRENCY: usize = 16;

/// The admin kubeconfig's client.
pub async fn client(kubeconfig: &Path) -> anyhow::Result<kube::Client> {
    let file = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("cannot read {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

pub fn api(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "gateway.networking.k8s.io".into(),
        version: "v1".into(),
        api_version: "gateway.networking.k8s.io/v1".into(),
        kind: "HTTPRoute".into(),
        plural: "httproutes".into(),
    };
    Api::namespaced_with(client, NAMESPACE, &resource)
}

/// Route `i` of the bulk set: its own hostname, one PathPrefix.
pub fn bulk_name(i: usize) -> String {
    format!("r{i}")
}

pub fn host(name: &str) -> String {
    format!("{name}.bench.example")
}

fn rules(path: &str) -> Value {
    json!([{
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "backendRefs": [{"name": "echo", "port": 80}],
    }])
}

/// Route `name` with `path`; with `hostname`, it also matches on its own
/// hostname only (`<name>.bench.example`).
pub fn route(name: &str, path: &str, hostname: bool) -> anyhow::Result<DynamicObject> {
    let hostnames = if hostname {
        vec![host(name)]
    } else {
        Vec::new()
    };
    let object = json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"name": GATEWAY}],
            "hostnames": hostnames,
            "rules": rules(path),
        },
    });
    Ok(serde_json::from_value(object)?)
}

/// Creates routes `0..count` (`/r<i>` on `r<i>.bench.example`), in parallel.
pub async fn create_bulk(
    api: &Api<DynamicObject>,
    count: usize,
    hostnames: bool,
) -> anyhow::Result<()> {
    futures::stream::iter(0..count)
        .map(|i| async move {
            let name = bulk_name(i);
            let object = route(&name, &format!("/{name}"), hostnames)?;
            api.create(&PostParams::default(), &object)
                .await
                .with_context(|| format!("create HTTPRoute {name}"))?;
            anyhow::Ok(())
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await
}

/// Creates one route; its new generation.
pub async fn create(
    api: &Api<DynamicObject>,
    name: &str,
    path: &str,
    hostname: bool,
) -> anyhow::Result<i64> {
    let created = api
        .create(&PostParams::default(), &route(name, path, hostname)?)
        .await?;
    created.metadata.generation.context("no generation")
}

/// Moves route `name` to `path` (JSON merge patch of its rules); the new
/// generation.
pub async fn move_path(api: &Api<DynamicObject>, name: &str, path: &str) -> anyhow::Result<i64> {
    let patch = json!({"spec": {"rules": rules(path)}});
    let patched = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    patched.metadata.generation.context("no generation")
}

/// True when the route's status for our Gateway is Accepted at `generation`.
fn accepted_at(route: &DynamicObject, generation: i64) -> bool {
    let parents = route.data["status"]["parents"].as_array();
    parents.into_iter().flatten().any(|parent| {
        parent["parentRef"]["name"] == GATEWAY
            && parent["conditions"].as_array().is_some_and(|conditions| {
                conditions.iter().any(|c| {
                    c["type"] == "Accepted"
                        && c["status"] == "True"
                        && c["observedGeneration"].as_i64() == Some(generation)
                })
            })
    })
}

/// Polls one route until its status is Accepted at `generation`.
pub async fn wait_status(
    api: &Api<DynamicObject>,
    name: &str,
    generation: i64,
    cap: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + cap;
    loop {
        if accepted_at(&api.get(name).await?, generation) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "HTTPRoute {name}: no Accepted status for generation {generation} within {cap:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Polls the whole list until at least `count` routes have their current
/// generation Accepted.
pub async fn wait_all_statuses(
    api: &Api<DynamicObject>,
    count: usize,
    cap: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + cap;
    loop {
        let list = api.list(&ListParams::default()).await?;
        let done = list
            .items
            .iter()
            .filter(|r| r.metadata.generation.is_some_and(|g| accepted_at(r, g)))
            .count();
        if done >= count {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {done} of {count} HTTPRoutes Accepted within {cap:?}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
