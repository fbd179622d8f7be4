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
#[path = "breaker_tests.rs"]
mod tests;
