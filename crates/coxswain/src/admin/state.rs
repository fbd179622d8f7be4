//! What the admin endpoint reports beyond the proxy itself: readiness,
//! reload counters, and the last computed statuses.

use std::fmt::Write as _;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use std::sync::Arc;

use coxswain_translate::Statuses;
use serde_json::Value;

use crate::conditions::all_statuses;

#[derive(Default)]
pub struct ReloadState {
    ready: AtomicBool,
    reloads_success: AtomicU64,
    reloads_error: AtomicU64,
    load_errors: AtomicU64,
    translate_nanos: AtomicU64,
    /// Last computed statuses; replaced wholesale after each translation.
    /// Read only by the admin endpoint, never on the request path.
    statuses: RwLock<Arc<Statuses>>,
}

/// The outcome of one load-translate-apply cycle.
pub struct ReloadOutcome {
    pub load_errors: usize,
    pub translate: Duration,
    /// Every listener bound (a failed bind keeps us unready).
    pub serving: bool,
    pub statuses: Arc<Statuses>,
}

impl ReloadState {
    pub fn record(&self, outcome: ReloadOutcome) {
        let counter = if outcome.load_errors == 0 && outcome.serving {
            &self.reloads_success
        } else {
            &self.reloads_error
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.load_errors
            .store(outcome.load_errors as u64, Ordering::Relaxed);
        let nanos = u64::try_from(outcome.translate.as_nanos()).unwrap_or(u64::MAX);
        self.translate_nanos.store(nanos, Ordering::Relaxed);
        if outcome.serving {
            self.ready.store(true, Ordering::Release);
        }
        if let Ok(mut statuses) = self.statuses.write() {
            *statuses = outcome.statuses;
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// `/status`: every computed status as `{kind, namespace, name, status}`.
    pub fn statuses_json(&self) -> Value {
        let Ok(statuses) = self.statuses.read().map(|s| s.clone()) else {
            return Value::Null;
        };
        let items = all_statuses(&statuses)
            .into_iter()
            .map(|(kind, key, status)| {
                serde_json::json!({
                    "kind": kind.name(),
                    "namespace": key.namespace,
                    "name": key.name,
                    "status": status,
                })
            })
            .collect();
        Value::Array(items)
    }

    /// Prometheus text for the reload series.
    pub fn render_metrics(&self, out: &mut String) {
        let success = self.reloads_success.load(Ordering::Relaxed);
        let error = self.reloads_error.load(Ordering::Relaxed);
        let load_errors = self.load_errors.load(Ordering::Relaxed);
        let seconds = self.translate_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let ready = u8::from(self.is_ready());
        let _ = write!(
            out,
            "# HELP coxswain_config_reloads_total Config loads applied, by result.\n\
             # TYPE coxswain_config_reloads_total counter\n\
             coxswain_config_reloads_total{{result=\"success\"}} {success}\n\
             coxswain_config_reloads_total{{result=\"error\"}} {error}\n\
             # HELP coxswain_config_load_errors Config file errors in the current load.\n\
             # TYPE coxswain_config_load_errors gauge\n\
             coxswain_config_load_errors {load_errors}\n\
             # HELP coxswain_translate_duration_seconds Duration of the last translation.\n\
             # TYPE coxswain_translate_duration_seconds gauge\n\
             coxswain_translate_duration_seconds {seconds}\n\
             # HELP coxswain_config_ready 1 once the first config is serving.\n\
             # TYPE coxswain_config_ready gauge\n\
             coxswain_config_ready {ready}\n"
        );
    }
}
