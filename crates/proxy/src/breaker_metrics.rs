//! The circuit breakers' metrics, one set per (upstream, endpoint):
//! `coxswain_proxy_circuit_breaker_state`, `_rejected_total` and
//! `_transitions_total{to}`. Counters are found at config compile time and
//! kept by the endpoints, so the request path only touches atomics.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: taken at config compile time and on scrape, never per request

use crate::breaker::BreakerState;

const STATES: [BreakerState; 3] = [
    BreakerState::Closed,
    BreakerState::Open,
    BreakerState::HalfOpen,
];

#[derive(Debug, Default)]
pub struct BreakerCounters {
    state: AtomicU8,
    rejected: AtomicU64,
    /// By target state, in [`STATES`] order.
    transitions: [AtomicU64; 3],
}

impl BreakerCounters {
    pub fn transition(&self, to: BreakerState) {
        self.state.store(to.gauge(), Ordering::Relaxed);
        if let Some(i) = STATES.iter().position(|s| *s == to)
            && let Some(c) = self.transitions.get(i)
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }
}

/// (upstream cluster, endpoint address) -> its counters.
type Key = (String, String);

#[derive(Debug, Default)]
pub struct BreakerMetrics(Mutex<BTreeMap<Key, Arc<BreakerCounters>>>);

impl BreakerMetrics {
    pub fn counters(&self, upstream: &str, endpoint: &str) -> Arc<BreakerCounters> {
        self.lock()
            .entry((upstream.to_string(), endpoint.to_string()))
            .or_default()
            .clone()
    }

    /// Forgets endpoints no longer in any breaker's config: pods come and
    /// go, and their series must not pile up.
    pub fn retain(&self, live: &BTreeSet<Key>) {
        self.lock().retain(|k, _| live.contains(k));
    }

    pub fn render(&self, out: &mut String) {
        let all: Vec<(Key, Arc<BreakerCounters>)> = self
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let labels = |(upstream, endpoint): &Key| {
            format!(
                "upstream=\"{}\",endpoint=\"{}\"",
                crate::metrics::escape(upstream),
                crate::metrics::escape(endpoint)
            )
        };
        out.push_str("# HELP coxswain_proxy_circuit_breaker_state Circuit breaker state per upstream endpoint: 0 closed, 1 open, 2 half-open.\n");
        out.push_str("# TYPE coxswain_proxy_circuit_breaker_state gauge\n");
        for (key, c) in &all {
            let _ = writeln!(
                out,
                "coxswain_proxy_circuit_breaker_state{{{}}} {}",
                labels(key),
                c.state.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP coxswain_proxy_circuit_breaker_rejected_total Requests refused with 503 because the endpoint's breaker was open.\n");
        out.push_str("# TYPE coxswain_proxy_circuit_breaker_rejected_total counter\n");
        for (key, c) in &all {
            let _ = writeln!(
                out,
                "coxswain_proxy_circuit_breaker_rejected_total{{{}}} {}",
                labels(key),
                c.rejected.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP coxswain_proxy_circuit_breaker_transitions_total Circuit breaker state changes by the state entered.\n");
        out.push_str("# TYPE coxswain_proxy_circuit_breaker_transitions_total counter\n");
        for (key, c) in &all {
            for (state, n) in STATES.iter().zip(&c.transitions) {
                let _ = writeln!(
                    out,
                    "coxswain_proxy_circuit_breaker_transitions_total{{{},to=\"{}\"}} {}",
                    labels(key),
                    state.label(),
                    n.load(Ordering::Relaxed)
                );
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, Arc<BreakerCounters>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_series_and_forgets_gone_endpoints() {
        let m = BreakerMetrics::default();
        let c = m.counters("default/api:80", "10.0.0.1:8080");
        c.transition(BreakerState::Open);
        c.rejected();
        c.rejected();
        m.counters("default/api:80", "10.0.0.2:8080");
        let mut out = String::new();
        m.render(&mut out);
        let l = "upstream=\"default/api:80\",endpoint=\"10.0.0.1:8080\"";
        assert!(
            out.contains(&format!("coxswain_proxy_circuit_breaker_state{{{l}}} 1\n")),
            "{out}"
        );
        assert!(out.contains(&format!(
            "coxswain_proxy_circuit_breaker_rejected_total{{{l}}} 2\n"
        )));
        assert!(out.contains(&format!(
            "coxswain_proxy_circuit_breaker_transitions_total{{{l},to=\"open\"}} 1\n"
        )));
        let live = BTreeSet::from([("default/api:80".to_string(), "10.0.0.1:8080".to_string())]);
        m.retain(&live);
        let mut out = String::new();
        m.render(&mut out);
        assert!(!out.contains("10.0.0.2"));
    }
}
