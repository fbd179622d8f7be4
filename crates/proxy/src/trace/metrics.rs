//! The exporter's counters: spans sent, spans lost and why, failed calls.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct TraceMetrics {
    exported: AtomicU64,
    /// Dropped because the export queue was full.
    queue_full: AtomicU64,
    /// Dropped after an export kept failing (or failed for good).
    export_failed: AtomicU64,
    /// Refused by the receiver (its partial-success answer).
    rejected: AtomicU64,
    /// Export calls that failed, retried ones included.
    failures: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl TraceMetrics {
    pub fn dropped_queue_full(&self) {
        add(&self.queue_full, 1);
    }

    pub fn exported(&self, spans: u64) {
        add(&self.exported, spans);
    }

    pub fn export_failed(&self, spans: u64) {
        add(&self.export_failed, spans);
    }

    pub fn rejected(&self, spans: u64) {
        add(&self.rejected, spans);
    }

    pub fn call_failed(&self) {
        add(&self.failures, 1);
    }

    pub fn render(&self, out: &mut String) {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let exported = "coxswain_proxy_trace_spans_exported_total";
        let dropped = "coxswain_proxy_trace_spans_dropped_total";
        let failures = "coxswain_proxy_trace_export_failures_total";
        let _ = writeln!(
            out,
            "# HELP {exported} Spans the OTLP receiver accepted.\n# TYPE {exported} counter\n{exported} {}",
            load(&self.exported)
        );
        let _ = writeln!(
            out,
            "# HELP {dropped} Spans never exported, by reason (queue_full, export_failed, rejected).\n# TYPE {dropped} counter"
        );
        for (reason, counter) in [
            ("queue_full", &self.queue_full),
            ("export_failed", &self.export_failed),
            ("rejected", &self.rejected),
        ] {
            let _ = writeln!(out, "{dropped}{{reason=\"{reason}\"}} {}", load(counter));
        }
        let _ = writeln!(
            out,
            "# HELP {failures} OTLP export calls that failed (each retry counts).\n# TYPE {failures} counter\n{failures} {}",
            load(&self.failures)
        );
    }
}
