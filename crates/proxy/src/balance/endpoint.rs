//! One endpoint of a cluster as the balancer sees it: its in-flight count,
//! its latency average and (under a policy that asks for one) its circuit
//! breaker. Kept across config reloads while the endpoint stays, so a
//! reload resets neither a breaker nor a latency estimate.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use tokio::time::Instant;

use crate::balance::key::fnv1a;
use crate::breaker::{Admission, CircuitBreaker};
use crate::breaker_metrics::BreakerCounters;

/// Weight of a new latency sample in the moving average: 1/8.
const EWMA_SHIFT: u32 = 3;

#[derive(Debug)]
pub struct Endpoint {
    pub address: SocketAddr,
    /// The address's hash: the rendezvous input and the session token.
    pub hash: u64,
    in_flight: AtomicU32,
    /// Moving average of time to response headers, in µs; 0 = no sample yet.
    latency_us: AtomicU64,
    breaker: Option<(CircuitBreaker, Arc<BreakerCounters>)>,
}

impl Endpoint {
    pub fn new(
        address: SocketAddr,
        breaker: Option<(CircuitBreaker, Arc<BreakerCounters>)>,
    ) -> Self {
        Endpoint {
            address,
            hash: fnv1a(address.to_string().as_bytes()),
            in_flight: AtomicU32::new(0),
            latency_us: AtomicU64::new(0),
            breaker,
        }
    }

    /// The value of the session cookie that pins a client here: a hash,
    /// so the pod's address is not handed to clients, and the same on
    /// every proxy replica.
    pub fn token(&self) -> String {
        format!("{:016x}", self.hash)
    }

    /// Is `token` this endpoint's session token?
    pub fn has_token(&self, token: &str) -> bool {
        u64::from_str_radix(token, 16).is_ok_and(|h| token.len() == 16 && h == self.hash)
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn latency_us(&self) -> u64 {
        self.latency_us.load(Ordering::Relaxed)
    }

    /// May a request go here now? `Some(probe)` when it may.
    pub fn admit(&self, now: Instant) -> Option<bool> {
        let Some((breaker, counters)) = &self.breaker else {
            return Some(false);
        };
        let (admission, transition) = breaker.admit(now);
        if let Some(t) = transition {
            counters.transition(t.to);
        }
        match admission {
            Admission::Allowed => Some(false),
            Admission::Probe => Some(true),
            Admission::Rejected => {
                counters.rejected();
                None
            }
        }
    }

    fn record(&self, now: Instant, success: bool, probe: bool, latency_us: u64) {
        if success {
            // Failures say nothing about how fast the endpoint answers.
            let sample = latency_us.max(1);
            let _ = self
                .latency_us
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                    Some(if old == 0 {
                        sample
                    } else {
                        old - (old >> EWMA_SHIFT) + (sample >> EWMA_SHIFT)
                    })
                });
        }
        if let Some((breaker, counters)) = &self.breaker
            && let Some(t) = breaker.record(now, success, probe)
        {
            counters.transition(t.to);
        }
    }
}

/// One request on one endpoint: counted in flight until dropped (the
/// response body holds it to its end), its outcome recorded once.
#[derive(Debug)]
pub struct Attempt {
    pub endpoint: Arc<Endpoint>,
    started: Instant,
    probe: bool,
    recorded: bool,
}

impl Attempt {
    pub fn start(endpoint: Arc<Endpoint>, probe: bool, now: Instant) -> Self {
        endpoint.in_flight.fetch_add(1, Ordering::Relaxed);
        Attempt {
            endpoint,
            started: now,
            probe,
            recorded: false,
        }
    }

    /// The outcome once known: response headers (success unless 5xx), or
    /// the failure to get them. Later calls are ignored.
    pub fn record(&mut self, success: bool, now: Instant) {
        if std::mem::replace(&mut self.recorded, true) {
            return;
        }
        let elapsed = now.saturating_duration_since(self.started);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.endpoint.record(now, success, self.probe, micros);
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        self.endpoint.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Arc<Endpoint> {
        Arc::new(Endpoint::new("10.0.0.1:80".parse().unwrap(), None))
    }

    #[tokio::test(start_paused = true)]
    async fn in_flight_until_dropped() {
        let e = endpoint();
        let now = Instant::now();
        let a = Attempt::start(e.clone(), false, now);
        let b = Attempt::start(e.clone(), false, now);
        assert_eq!(e.in_flight(), 2);
        drop(a);
        assert_eq!(e.in_flight(), 1);
        drop(b);
        assert_eq!(e.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn latency_is_a_moving_average_of_successes() {
        let e = endpoint();
        let t0 = Instant::now();
        let mut a = Attempt::start(e.clone(), false, t0);
        a.record(true, t0 + std::time::Duration::from_millis(8));
        assert_eq!(e.latency_us(), 8_000, "the first sample is taken whole");
        let mut b = Attempt::start(e.clone(), false, t0);
        b.record(true, t0 + std::time::Duration::from_millis(16));
        assert_eq!(e.latency_us(), 8_000 - 1_000 + 2_000, "alpha = 1/8");
        let mut c = Attempt::start(e.clone(), false, t0);
        c.record(false, t0 + std::time::Duration::from_secs(30));
        c.record(true, t0);
        assert_eq!(e.latency_us(), 9_000, "failures and repeats change nothing");
    }

    #[test]
    fn tokens_name_one_endpoint() {
        let a = endpoint();
        let b = Endpoint::new("10.0.0.2:80".parse().unwrap(), None);
        assert!(a.has_token(&a.token()));
        assert!(!b.has_token(&a.token()));
        assert!(!a.has_token("zz"));
        assert_eq!(a.token().len(), 16);
    }
}
