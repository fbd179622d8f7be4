//! Counters of the controller's writes, rendered in Prometheus text format.

use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Metrics {
    pub translations: AtomicU64,
    pub status_echoes: AtomicU64,
    pub status_writes: AtomicU64,
    pub status_write_errors: AtomicU64,
    pub status_write_conflicts: AtomicU64,
    pub status_writes_skipped: AtomicU64,
    pub resource_writes: AtomicU64,
    pub resource_write_errors: AtomicU64,
    pub leader: AtomicBool,
}

impl Metrics {
    pub fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self, out: &mut String) {
        let counters: [(&str, &str, &AtomicU64); 8] = [
            (
                "coxswain_controller_translations_total",
                "Translations of the watched snapshot.",
                &self.translations,
            ),
            (
                "coxswain_controller_status_echoes_total",
                "Watch events that changed only route or Gateway statuses: not translated.",
                &self.status_echoes,
            ),
            (
                "coxswain_controller_status_writes_total",
                "Successful status writes.",
                &self.status_writes,
            ),
            (
                "coxswain_controller_status_write_errors_total",
                "Failed status writes (retried on the next pass).",
                &self.status_write_errors,
            ),
            (
                "coxswain_controller_status_write_conflicts_total",
                "Status writes rejected by a resourceVersion conflict.",
                &self.status_write_conflicts,
            ),
            (
                "coxswain_controller_status_writes_skipped_total",
                "Statuses already up to date, not written.",
                &self.status_writes_skipped,
            ),
            (
                "coxswain_controller_resource_writes_total",
                "Gateway Services and ServiceAccounts applied.",
                &self.resource_writes,
            ),
            (
                "coxswain_controller_resource_write_errors_total",
                "Failed Service/ServiceAccount applies.",
                &self.resource_write_errors,
            ),
        ];
        for (name, help, counter) in counters {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            let _ = writeln!(out, "{name} {}", counter.load(Ordering::Relaxed));
        }
        let leader = u8::from(self.leader.load(Ordering::Relaxed));
        let _ = writeln!(
            out,
            "# HELP coxswain_controller_leader 1 while this replica holds the Lease.\n\
             # TYPE coxswain_controller_leader gauge\ncoxswain_controller_leader {leader}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters() {
        let metrics = Metrics::default();
        Metrics::add(&metrics.status_writes);
        Metrics::add(&metrics.status_writes);
        metrics.leader.store(true, Ordering::Relaxed);
        let mut out = String::new();
        metrics.render(&mut out);
        assert!(out.contains("coxswain_controller_status_writes_total 2\n"));
        assert!(out.contains("coxswain_controller_status_write_errors_total 0\n"));
        assert!(out.contains("coxswain_controller_leader 1\n"));
    }
}
