//! `coxswain run`: load, translate, serve; then reload on every change
//! until SIGTERM/SIGINT, when we stop accepting and drain.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use coxswain_api::Snapshot;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_provider_file::{Loaded, Reload, Watcher};
use coxswain_proxy::Proxy;
use coxswain_translate::{Options, Translator, mark_unbound};
use tokio::signal::unix::{SignalKind, signal};

use crate::admin::{Admin, ReloadOutcome, ReloadState};
use crate::cli::RunArgs;
use crate::conditions::problems;
use crate::echo;

/// `lastTransitionTime` for conditions computed now.
pub fn now() -> Time {
    Time(Timestamp::now())
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let (proxy, state) = Admin::start(args.admin_address, args.proxy.options()?, None).await?;
    if let Some(address) = args.echo {
        let listener = echo::bind(address).await?;
        tracing::info!(%address, "echo backend listening");
        tokio::spawn(echo::serve_on(listener, echo::Identity::from_env(None)));
    }

    let (_watcher, initial, mut reloads) = Watcher::start(&args.config)
        .with_context(|| format!("cannot watch {}", args.config.display()))?;
    let mut pipeline = Pipeline {
        proxy: proxy.clone(),
        state,
        translator: Translator::new(),
        options: Options {
            controller_name: args.controller_name.as_str().into(),
            default_address: args.bind_address,
            now: now(),
            ingress: args.ingress.options(),
            dedicated_pools: false,
        },
        snapshot: Snapshot::default(),
        unbound: false,
    };
    pipeline.apply(initial, &[], None).await;

    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    loop {
        tokio::select! {
            reload = reloads.recv() => {
                let Some(reload) = reload else {
                    tracing::error!("config watcher stopped; serving the last config until shutdown");
                    break;
                };
                let (latest, changed, timing) = coalesce(reload, &mut reloads);
                pipeline.apply(latest, &changed, Some(timing)).await;
            }
            // A socket that could not be bound (port in use) is tried again.
            () = tokio::time::sleep(BIND_RETRY), if pipeline.unbound => pipeline.rebind().await,
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        }
    }
    // A watcher that died leaves us serving; still wait for a signal to exit.
    if reloads.is_closed() {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    }
    tracing::info!(drain_timeout = ?args.proxy.drain_timeout, "shutting down: draining in-flight requests");
    proxy.shutdown().await;
    tracing::info!("shutdown complete");
    Ok(())
}

/// When a change was first seen, and when its snapshot was ready.
#[derive(Clone, Copy)]
struct Timing {
    first_event: Instant,
    built: Instant,
}

/// Takes every reload already queued: only the newest snapshot matters,
/// but the log should name all files that changed.
fn coalesce(
    first: Reload,
    reloads: &mut tokio::sync::mpsc::UnboundedReceiver<Reload>,
) -> (Loaded, Vec<PathBuf>, Timing) {
    let mut timing = Timing {
        first_event: first.first_event,
        built: first.built,
    };
    let mut changed = first.changed;
    let mut latest = first.loaded;
    while let Ok(next) = reloads.try_recv() {
        changed.extend(next.changed);
        latest = next.loaded;
        timing.built = next.built;
    }
    changed.sort();
    changed.dedup();
    (latest, changed, timing)
}

/// How often sockets that could not be bound are tried again.
const BIND_RETRY: Duration = Duration::from_secs(5);

struct Pipeline {
    proxy: Proxy,
    state: Arc<ReloadState>,
    /// Remembers per-route results, so a one-route change costs one route.
    translator: Translator,
    options: Options,
    /// The snapshot last applied (for bind retries).
    snapshot: Snapshot,
    /// Some socket of the applied config is not bound.
    unbound: bool,
}

impl Pipeline {
    async fn apply(&mut self, loaded: Loaded, changed: &[PathBuf], timing: Option<Timing>) {
        for error in &loaded.errors {
            eprintln!("{error}");
        }
        let options = Options {
            now: now(),
            ..self.options.clone()
        };
        let translate_start = Instant::now();
        let mut output = self.translator.translate(&loaded.snapshot, &options);
        let translate_time = translate_start.elapsed();
        let apply_start = Instant::now();
        let ir = Arc::new(std::mem::take(&mut output.ir));
        let report = self.proxy.apply(ir.clone()).await;
        let apply_time = apply_start.elapsed();
        for failed in &report.failed {
            tracing::error!(address = %failed.address, transport = ?failed.transport, error = %failed.error, "cannot bind listener");
        }
        mark_unbound(&mut output.statuses, &ir, &report.failed, &options.now);
        self.unbound = !report.failed.is_empty();
        self.snapshot = loaded.snapshot.clone();
        let files: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
        let trigger = match timing {
            None => "startup",
            Some(_) if files.is_empty() => "rescan",
            Some(_) => "change",
        };
        tracing::info!(
            trigger,
            files = ?files,
            routes = output.statuses.routes.len(),
            load_errors = loaded.errors.len(),
            listeners = report.bound.len(),
            translate_ms = ms(translate_time),
            apply_ms = ms(apply_time),
            watch_ms = timing.map(|t| ms(t.built.duration_since(t.first_event))),
            since_change_ms = timing.map(|t| ms(t.first_event.elapsed())),
            "config applied"
        );
        let statuses = Arc::new(output.statuses);
        for (kind, key, problem) in problems(&statuses) {
            tracing::warn!("{kind} {key} rejected: {problem}");
        }
        self.state.record(ReloadOutcome {
            load_errors: loaded.errors.len(),
            translate: translate_time,
            serving: report.failed.is_empty(),
            statuses,
        });
    }

    /// Applies the last snapshot again, binding what failed before.
    async fn rebind(&mut self) {
        let loaded = Loaded {
            snapshot: self.snapshot.clone(),
            objects: Vec::new(),
            errors: Vec::new(),
        };
        self.apply(loaded, &[], None).await;
    }
}

fn ms(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1e5).round() / 100.0
}
