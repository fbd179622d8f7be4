#![allow(dead_code)] // Wired into the cluster state next.
//! Per-endpoint circuit breaker: stops sending requests to an endpoint whose
//! recent error rate crossed the policy's threshold, then lets one probe
//! through at a time to find out whether it recovered.

use std::sync::{Mutex, PoisonError}; // lock-ok: one short critical section per request to an endpoint whose policy asks for a breaker
use std::time::Duration;

use tokio::time::Instant;

/// Buckets in the sliding window; each covers a tenth of it.
const BUCKETS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    /// 0 closed, 1 open, 2 half-open (the metric's value).
    pub fn gauge(self) -> u8 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
        }
    }

    /// "closed" | "open" | "half_open" (the metric's `to` label).
    pub fn label(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    Allowed,
    /// The one request that tests a half-open endpoint; record it with `probe`.
    Probe,
    Rejected,
}

/// A state change to report in metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub to: BreakerState,
}

#[derive(Debug)]
pub struct CircuitBreaker {
    threshold_percent: u64,
    min_requests: u64,
    base_open: Duration,
    /// At least `base_open`, so doubling never shortens the open time.
    max_open: Option<Duration>,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    /// How long the next (or current) open lasts.
    open_for: Duration,
    window: Window,
}

/// Timestamps live in the phase so a stale one cannot outlive its state.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Closed,
    Open { since: Instant },
    HalfOpen { probe_since: Instant },
}

impl Phase {
    fn state(self) -> BreakerState {
        match self {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

impl CircuitBreaker {
    pub fn new(config: &coxswain_ir::Breaker) -> Self {
        let base_open = Duration::from_millis(config.open_ms);
        CircuitBreaker {
            threshold_percent: u64::from(config.threshold_percent),
            min_requests: u64::from(config.min_requests),
            base_open,
            max_open: config
                .max_open_ms
                .map(|ms| Duration::from_millis(ms).max(base_open)),
            inner: Mutex::new(Inner {
                phase: Phase::Closed,
                open_for: base_open,
                window: Window::new(config.window_ms),
            }),
        }
    }

    /// May a request go to this endpoint now? Moving Open -> HalfOpen on the first call after
    /// the open time has passed is a transition the caller reports.
    pub fn admit(&self, now: Instant) -> (Admission, Option<Transition>) {
        let mut inner = self.lock();
        match inner.phase {
            Phase::Closed => (Admission::Allowed, None),
            Phase::Open { since } => {
                if now.saturating_duration_since(since) < inner.open_for {
                    return (Admission::Rejected, None);
                }
                inner.phase = Phase::HalfOpen { probe_since: now };
                (
                    Admission::Probe,
                    Some(Transition {
                        to: BreakerState::HalfOpen,
                    }),
                )
            }
            Phase::HalfOpen { probe_since } => {
                // A probe whose outcome never came back (its caller dropped
                // it) must not keep the endpoint shut forever.
                if now.saturating_duration_since(probe_since) < inner.open_for {
                    return (Admission::Rejected, None);
                }
                inner.phase = Phase::HalfOpen { probe_since: now };
                (Admission::Probe, None)
            }
        }
    }

    /// The outcome of an admitted request (`probe` is true when admit returned Probe).
    pub fn record(&self, now: Instant, success: bool, probe: bool) -> Option<Transition> {
        let mut inner = self.lock();
        match inner.phase {
            Phase::HalfOpen { .. } if probe => {
                if success {
                    inner.phase = Phase::Closed;
                    inner.open_for = self.base_open;
                    inner.window.clear();
                    Some(Transition {
                        to: BreakerState::Closed,
                    })
                } else {
                    inner.open_for = self.reopen_time(inner.open_for);
                    inner.phase = Phase::Open { since: now };
                    Some(Transition {
                        to: BreakerState::Open,
                    })
                }
            }
            // A late probe (one presumed lost) lands here once the breaker
            // closed again: it is an ordinary outcome then.
            Phase::Closed => {
                inner.window.record(now, success);
                let (successes, failures) = inner.window.totals(now);
                let total = successes.saturating_add(failures);
                let tripped = total >= self.min_requests
                    && failures.saturating_mul(100) >= self.threshold_percent.saturating_mul(total);
                if !tripped {
                    return None;
                }
                inner.phase = Phase::Open { since: now };
                inner.open_for = self.base_open;
                inner.window.clear();
                Some(Transition {
                    to: BreakerState::Open,
                })
            }
            // Outcomes of requests admitted before the breaker opened say
            // nothing new: it is already shut.
            Phase::Open { .. } | Phase::HalfOpen { .. } => None,
        }
    }

    pub fn state(&self) -> BreakerState {
        self.lock().phase.state()
    }

    /// The open time after a failed probe: doubled up to the cap, or
    /// constant when the policy sets none.
    fn reopen_time(&self, current: Duration) -> Duration {
        match self.max_open {
            Some(max) => current.checked_mul(2).unwrap_or(max).min(max),
            None => self.base_open,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Outcomes over the last `window_ms`, in time buckets so old ones expire
/// by age rather than by count.
#[derive(Debug)]
struct Window {
    /// At least 1 ms; `BUCKETS * width_ms` never exceeds the window (for
    /// windows of 10 ms or more), so nothing older than it counts.
    width_ms: u64,
    /// Bucket numbers count from the first outcome recorded.
    origin: Option<Instant>,
    buckets: [Bucket; BUCKETS],
}

#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    /// Which bucket number this slot currently holds.
    epoch: u64,
    successes: u64,
    failures: u64,
}

impl Window {
    fn new(window_ms: u64) -> Self {
        Window {
            width_ms: (window_ms / BUCKETS as u64).max(1),
            origin: None,
            buckets: [Bucket::default(); BUCKETS],
        }
    }

    fn epoch(&mut self, now: Instant) -> u64 {
        let origin = *self.origin.get_or_insert(now);
        let elapsed =
            u64::try_from(now.saturating_duration_since(origin).as_millis()).unwrap_or(u64::MAX);
        elapsed / self.width_ms
    }

    fn record(&mut self, now: Instant, success: bool) {
        let epoch = self.epoch(now);
        let Some(bucket) = self.buckets.get_mut(slot(epoch)) else {
            return;
        };
        if bucket.epoch < epoch {
            *bucket = Bucket {
                epoch,
                ..Bucket::default()
            };
        } else if bucket.epoch > epoch {
            // A newer bucket holds the slot: this outcome (timed before
            // another task's) is already older than the window.
            return;
        }
        if success {
            bucket.successes = bucket.successes.saturating_add(1);
        } else {
            bucket.failures = bucket.failures.saturating_add(1);
        }
    }

    /// (successes, failures) still inside the window at `now`.
    fn totals(&mut self, now: Instant) -> (u64, u64) {
        let epoch = self.epoch(now);
        self.buckets
            .iter()
            .filter(|b| epoch.saturating_sub(b.epoch) < BUCKETS as u64)
            .fold((0u64, 0u64), |(s, f), b| {
                (s.saturating_add(b.successes), f.saturating_add(b.failures))
            })
    }

    fn clear(&mut self) {
        self.buckets = [Bucket::default(); BUCKETS];
    }
}

fn slot(epoch: u64) -> usize {
    (epoch % BUCKETS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_open_ms: Option<u64>) -> coxswain_ir::Breaker {
        coxswain_ir::Breaker {
            threshold_percent: 50,
            window_ms: 1_000,
            open_ms: 100,
            min_requests: 4,
            max_open_ms,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn to(state: BreakerState) -> Option<Transition> {
        Some(Transition { to: state })
    }

    /// Records `n` outcomes at `at`; returns the transitions reported.
    fn record_n(b: &CircuitBreaker, at: Instant, n: usize, success: bool) -> Vec<Transition> {
        (0..n)
            .filter_map(|_| b.record(at, success, false))
            .collect()
    }

    /// Opens a breaker at `at` with four failures.
    fn open(b: &CircuitBreaker, at: Instant) {
        assert_eq!(
            record_n(b, at, 4, false),
            vec![Transition {
                to: BreakerState::Open
            }]
        );
    }

    #[test]
    fn state_gauge_and_label() {
        assert_eq!(BreakerState::Closed.gauge(), 0);
        assert_eq!(BreakerState::Open.gauge(), 1);
        assert_eq!(BreakerState::HalfOpen.gauge(), 2);
        assert_eq!(BreakerState::Closed.label(), "closed");
        assert_eq!(BreakerState::Open.label(), "open");
        assert_eq!(BreakerState::HalfOpen.label(), "half_open");
    }

    #[test]
    fn stays_closed_below_min_requests() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        assert!(record_n(&b, t0, 3, false).is_empty());
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.admit(t0), (Admission::Allowed, None));
    }

    #[test]
    fn opens_at_threshold() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        // 1 failure in 3: below 50% (and below min_requests).
        assert!(record_n(&b, t0, 2, true).is_empty());
        assert_eq!(b.record(t0, false, false), None);
        // 2 failures in 4: exactly 50%.
        assert_eq!(b.record(t0 + ms(10), false, false), to(BreakerState::Open));
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn stays_closed_under_threshold() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        assert!(record_n(&b, t0, 6, true).is_empty());
        assert!(record_n(&b, t0, 5, false).is_empty());
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn rejects_while_open() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        open(&b, t0);
        assert_eq!(b.admit(t0), (Admission::Rejected, None));
        assert_eq!(b.admit(t0 + ms(99)), (Admission::Rejected, None));
        // Late outcomes of requests admitted before opening change nothing.
        assert_eq!(b.record(t0 + ms(50), true, false), None);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn one_probe_after_open_time() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        open(&b, t0);
        assert_eq!(
            b.admit(t0 + ms(100)),
            (Admission::Probe, to(BreakerState::HalfOpen))
        );
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert_eq!(b.admit(t0 + ms(100)), (Admission::Rejected, None));
        assert_eq!(b.admit(t0 + ms(150)), (Admission::Rejected, None));
    }

    #[test]
    fn probe_success_closes_and_clears_window() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        open(&b, t0);
        let t1 = t0 + ms(100);
        assert_eq!(b.admit(t1).0, Admission::Probe);
        assert_eq!(b.record(t1, true, true), to(BreakerState::Closed));
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.admit(t1), (Admission::Allowed, None));
        // The failures that opened it are gone: three more do not reopen it.
        assert!(record_n(&b, t1, 3, false).is_empty());
        assert_eq!(b.record(t1, false, false), to(BreakerState::Open));
    }

    #[test]
    fn probe_failure_reopens_with_doubling_capped() {
        let b = CircuitBreaker::new(&config(Some(300)));
        let t0 = Instant::now();
        open(&b, t0);
        // Open 100 ms, then 200, then 300 (capped), then 300 again.
        let mut at = t0;
        for open_for in [100, 200, 300, 300] {
            assert_eq!(b.admit(at + ms(open_for - 1)), (Admission::Rejected, None));
            at += ms(open_for);
            assert_eq!(b.admit(at), (Admission::Probe, to(BreakerState::HalfOpen)));
            assert_eq!(b.record(at, false, true), to(BreakerState::Open));
        }
        // A successful probe resets the open time.
        at += ms(300);
        assert_eq!(b.admit(at).0, Admission::Probe);
        assert_eq!(b.record(at, true, true), to(BreakerState::Closed));
        open(&b, at);
        assert_eq!(b.admit(at + ms(99)), (Admission::Rejected, None));
        assert_eq!(b.admit(at + ms(100)).0, Admission::Probe);
    }

    #[test]
    fn probe_failure_reopens_for_constant_time_without_max() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        open(&b, t0);
        let mut at = t0;
        for _ in 0..3 {
            assert_eq!(b.admit(at + ms(99)), (Admission::Rejected, None));
            at += ms(100);
            assert_eq!(b.admit(at), (Admission::Probe, to(BreakerState::HalfOpen)));
            assert_eq!(b.record(at, false, true), to(BreakerState::Open));
        }
    }

    #[test]
    fn old_outcomes_expire() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        assert!(record_n(&b, t0, 3, false).is_empty());
        // A window later, those three no longer count.
        let t1 = t0 + ms(1_000);
        assert!(record_n(&b, t1, 3, false).is_empty());
        assert_eq!(b.state(), BreakerState::Closed);
        // Within the window they do.
        assert_eq!(b.record(t1 + ms(500), false, false), to(BreakerState::Open));
    }

    #[test]
    fn old_successes_expire_too() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        assert!(record_n(&b, t0, 20, true).is_empty());
        let t1 = t0 + ms(1_500);
        assert!(record_n(&b, t1, 3, false).is_empty());
        assert_eq!(b.record(t1, false, false), to(BreakerState::Open));
    }

    #[test]
    fn lost_probe_is_replaced() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        open(&b, t0);
        let t1 = t0 + ms(100);
        assert_eq!(b.admit(t1), (Admission::Probe, to(BreakerState::HalfOpen)));
        // The probe never reports back.
        assert_eq!(b.admit(t1 + ms(99)), (Admission::Rejected, None));
        let t2 = t1 + ms(100);
        assert_eq!(b.admit(t2), (Admission::Probe, None));
        assert_eq!(b.admit(t2), (Admission::Rejected, None));
        assert_eq!(b.record(t2, true, true), to(BreakerState::Closed));
        // The lost probe reporting late counts as an ordinary outcome.
        assert_eq!(b.record(t2, false, true), None);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn transitions_reported_once() {
        let b = CircuitBreaker::new(&config(None));
        let t0 = Instant::now();
        let opened: Vec<_> = (0..10).filter_map(|_| b.record(t0, false, false)).collect();
        assert_eq!(
            opened,
            vec![Transition {
                to: BreakerState::Open
            }]
        );
        let t1 = t0 + ms(100);
        let admits: Vec<_> = (0..5).map(|_| b.admit(t1)).collect();
        assert_eq!(admits.iter().filter_map(|(_, t)| *t).count(), 1);
        assert_eq!(
            admits
                .iter()
                .filter(|(a, _)| *a == Admission::Probe)
                .count(),
            1
        );
        assert_eq!(b.record(t1, true, true), to(BreakerState::Closed));
        // A second report for the same probe changes nothing.
        assert_eq!(b.record(t1, true, true), None);
    }

    #[test]
    fn concurrent_admits_let_one_probe_through() {
        use std::sync::Arc;
        let b = Arc::new(CircuitBreaker::new(&config(None)));
        let t0 = Instant::now();
        open(&b, t0);
        let t1 = t0 + ms(100);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || b.admit(t1))
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let probes = results
            .iter()
            .filter(|(a, _)| *a == Admission::Probe)
            .count();
        let transitions = results.iter().filter(|(_, t)| t.is_some()).count();
        assert_eq!((probes, transitions), (1, 1));
    }
}
