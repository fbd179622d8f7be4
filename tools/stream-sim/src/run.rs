//! The controller's process: builds the world, serves the stream, starts
//! the proxies' process, measures the initial sync and then each route
//! change until every proxy applied it.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use coxswain_api::Object;
use coxswain_stream::Resources;
use tokio::io::BufReader;
use tokio::process::Command;

use crate::acks::Acks;
use crate::feed::Feed;
use crate::hub::{SERVER_NAME, Server, TempDir};
use crate::measure;
use crate::world::{self, GATEWAY};

/// The stream client's bound on one update: a larger one is refused by
/// every proxy, which then redials with backoff forever, so the run could
/// only time out.
const CLIENT_DECODE_LIMIT: usize = coxswain_stream::client::MAX_UPDATE_BYTES;

pub struct Settings {
    pub routes: usize,
    pub proxies: usize,
    pub changes: usize,
    /// Bound on each wait for acks (initial sync, each change).
    pub timeout: Duration,
}

/// Everything the report shows.
pub struct Results {
    pub settings_routes: usize,
    pub proxies: usize,
    pub ir_routes: usize,
    pub clusters: usize,
    pub resources: usize,
    /// The largest resource body (the listener, holding every route).
    pub largest_resource: (String, usize),
    pub initial_translate: Duration,
    pub initial_encode: Duration,
    pub full_update_bytes: usize,
    pub rss_before: u64,
    pub rss_synced: u64,
    pub rss_end: u64,
    pub sync_wall: Duration,
    pub sync_cpu: Duration,
    pub sync_hub_bytes: u64,
    pub changes: Vec<Change>,
    pub stray_acks: u64,
    pub connected: usize,
    pub rejected: Option<(String, String)>,
}

/// One route change.
pub struct Change {
    /// From the new snapshot to the last proxy's ack.
    pub total: Duration,
    pub translate: Duration,
    pub encode: Duration,
    /// From publishing to the last proxy's ack.
    pub distribute: Duration,
    /// Controller CPU while translating and encoding, and while
    /// distributing.
    pub cpu_prepare: Duration,
    pub cpu_distribute: Duration,
    /// The proxies' process's CPU between the last acks of the previous
    /// version and of this one.
    pub proxies_cpu: Duration,
    /// `encoded_len` of the update a proxy holding the previous version
    /// gets, and of the one an empty proxy would get.
    pub incremental_bytes: usize,
    pub full_bytes: usize,
    pub upserts: usize,
    /// What the hub counted as sent to all proxies for this change.
    pub hub_bytes: u64,
    pub hub_updates: u64,
}

pub async fn run(settings: &Settings) -> anyhow::Result<Results> {
    let mut snapshot = world::snapshot(settings.routes)?;
    let mut feed = Feed::new(GATEWAY, world::options());
    let initial = feed.prepare(&snapshot)?;
    let mut current = initial.resources.clone();
    let full_update_bytes = update_len(&current, &BTreeMap::new());
    let largest_resource = current
        .items()
        .iter()
        .map(|(name, item)| (name.to_string(), item.body().len()))
        .max_by_key(|(_, len)| *len)
        .unwrap_or_default();
    if full_update_bytes > CLIENT_DECODE_LIMIT {
        bail!(
            "the full update of {} routes is {full_update_bytes} bytes (largest resource {} of {} \
             bytes), over the {CLIENT_DECODE_LIMIT}-byte message limit of the stream's client \
             (tonic's default max_decoding_message_size): no proxy could sync; \
             use fewer --routes",
            settings.routes,
            largest_resource.0,
            largest_resource.1
        );
    }

    let server = Server::start().await?;
    server.publish(GATEWAY, current.clone());
    let credentials = TempDir::new("credentials")?;
    server.write_credentials(&credentials.0, GATEWAY, settings.proxies)?;

    let rss_before = measure::rss()?;
    let cpu_before = measure::cpu()?;
    let started = Instant::now();
    let mut child = Command::new(std::env::current_exe().context("locating this binary")?)
        .arg("proxies")
        .arg("--endpoint")
        .arg(&server.address)
        .arg("--server-name")
        .arg(SERVER_NAME)
        .arg("--credentials-dir")
        .arg(&credentials.0)
        .arg("--count")
        .arg(settings.proxies.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting the proxies' process")?;
    let stdout = child.stdout.take().context("the proxies' stdout")?;
    let mut acks = Acks::new(BufReader::new(stdout));
    let version = current.version();
    let mut proxies_cpu = bounded(
        settings.timeout,
        "the initial sync",
        acks.wait(&version, settings.proxies),
    )
    .await?;
    let sync_wall = started.elapsed();
    let sync_cpu = measure::cpu()?.saturating_sub(cpu_before);
    let rss_synced = measure::rss()?;
    let mut hub = server.report(GATEWAY);
    let sync_hub_bytes = hub.bytes_sent;

    let mut changes = Vec::with_capacity(settings.changes);
    for k in 0..settings.changes {
        let (route, prefix) = world::change(k, settings.routes);
        snapshot.insert(Object::HttpRoute(Arc::new(world::route(route, &prefix)?)));
        let cpu0 = measure::cpu()?;
        let start = Instant::now();
        let prepared = feed.prepare(&snapshot)?;
        let cpu1 = measure::cpu()?;
        let published = Instant::now();
        server.publish(GATEWAY, prepared.resources.clone());
        let version = prepared.resources.version();
        let cpu_after = bounded(
            settings.timeout,
            "a change",
            acks.wait(&version, settings.proxies),
        )
        .await?;
        let end = Instant::now();
        let cpu2 = measure::cpu()?;
        // Sizes, outside the clock: what a proxy holding the previous
        // version was sent, and what an empty one would be.
        let incremental = prepared.resources.update_for(&current.digests());
        let report = server.report(GATEWAY);
        changes.push(Change {
            total: end - start,
            translate: prepared.translate,
            encode: prepared.encode,
            distribute: end - published,
            cpu_prepare: cpu1.saturating_sub(cpu0),
            cpu_distribute: cpu2.saturating_sub(cpu1),
            proxies_cpu: cpu_after.saturating_sub(proxies_cpu),
            incremental_bytes: incremental
                .as_ref()
                .map(prost::Message::encoded_len)
                .unwrap_or(0),
            full_bytes: update_len(&prepared.resources, &BTreeMap::new()),
            upserts: incremental.as_ref().map(|u| u.upserts.len()).unwrap_or(0),
            hub_bytes: report.bytes_sent.saturating_sub(hub.bytes_sent),
            hub_updates: report.updates_sent.saturating_sub(hub.updates_sent),
        });
        hub = report;
        proxies_cpu = cpu_after;
        current = prepared.resources;
    }
    let rss_end = measure::rss()?;
    // Closing its stdin ends the proxies' process.
    drop(child.stdin.take());
    let _ = bounded(settings.timeout, "the proxies' exit", async {
        child
            .wait()
            .await
            .context("waiting for the proxies' process")
    })
    .await;
    Ok(Results {
        settings_routes: settings.routes,
        proxies: settings.proxies,
        ir_routes: initial.routes,
        clusters: initial.clusters,
        resources: current.len(),
        largest_resource,
        initial_translate: initial.translate,
        initial_encode: initial.encode,
        full_update_bytes,
        rss_before,
        rss_synced,
        rss_end,
        sync_wall,
        sync_cpu,
        sync_hub_bytes,
        changes,
        stray_acks: acks.stray,
        connected: hub.connected,
        rejected: hub.rejected,
    })
}

fn update_len(resources: &Resources, held: &BTreeMap<String, String>) -> usize {
    resources
        .update_for(held)
        .as_ref()
        .map(prost::Message::encoded_len)
        .unwrap_or(0)
}

async fn bounded<T>(
    limit: Duration,
    what: &str,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::time::timeout(limit, work)
        .await
        .with_context(|| format!("{what} took longer than {limit:?}"))?
}
