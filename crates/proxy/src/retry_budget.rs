//! A cluster's retry budget (XBackendTrafficPolicy `retryConstraint`):
//! retries may make up at most `percent` of the requests sent to the
//! cluster over the budget's interval; below `min_count` retries per
//! `min_interval` they are always allowed, so a quiet backend can still be
//! retried. Counts are kept in ten buckets per interval.

use std::sync::{Mutex, PoisonError}; // lock-ok: one short critical section per request, only for clusters whose policy sets a budget
use std::time::Duration;

use tokio::time::Instant;

const BUCKETS: u64 = 10;

#[derive(Debug)]
pub struct RetryBudget {
    pub config: coxswain_ir::RetryBudget,
    start: Instant,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Every attempt (first tries and retries) over the budget interval.
    attempts: Counter,
    /// Retries over the budget interval.
    retries: Counter,
    /// Retries over the minimum-rate interval.
    recent_retries: Counter,
}

impl RetryBudget {
    pub fn new(config: &coxswain_ir::RetryBudget, now: Instant) -> Self {
        RetryBudget {
            config: config.clone(),
            start: now,
            inner: Mutex::new(Inner {
                attempts: Counter::new(config.interval_ms),
                retries: Counter::new(config.interval_ms),
                recent_retries: Counter::new(config.min_interval_ms),
            }),
        }
    }

    /// Counts a request's first attempt.
    pub fn first_attempt(&self, now: Instant) {
        let t = self.elapsed(now);
        self.lock().attempts.add(t);
    }

    /// May a request be tried again now? Counted when it may.
    pub fn try_retry(&self, now: Instant) -> bool {
        let t = self.elapsed(now);
        let mut inner = self.lock();
        let attempts = inner.attempts.total(t).saturating_add(1);
        let retries = inner.retries.total(t).saturating_add(1);
        let within_budget =
            retries.saturating_mul(100) <= attempts.saturating_mul(u64::from(self.config.percent));
        let below_minimum = inner.recent_retries.total(t) < u64::from(self.config.min_count);
        if !(within_budget || below_minimum) {
            return false;
        }
        inner.attempts.add(t);
        inner.retries.add(t);
        inner.recent_retries.add(t);
        true
    }

    fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts over a sliding interval, in [`BUCKETS`] buckets.
#[derive(Debug)]
struct Counter {
    bucket_ms: u64,
    /// (bucket number, count) per slot.
    slots: [(u64, u64); BUCKETS as usize],
}

impl Counter {
    fn new(interval_ms: u64) -> Self {
        Counter {
            bucket_ms: (interval_ms / BUCKETS).max(1),
            slots: [(u64::MAX, 0); BUCKETS as usize],
        }
    }

    fn bucket(&self, t: Duration) -> u64 {
        u64::try_from(t.as_millis()).unwrap_or(u64::MAX) / self.bucket_ms
    }

    fn add(&mut self, t: Duration) {
        let b = self.bucket(t);
        if let Some(slot) = self.slots.get_mut((b % BUCKETS) as usize) {
            if slot.0 != b {
                *slot = (b, 0);
            }
            slot.1 += 1;
        }
    }

    /// The count over the last interval (the current bucket and the nine before).
    fn total(&self, t: Duration) -> u64 {
        let now = self.bucket(t);
        self.slots
            .iter()
            .filter(|(b, _)| *b != u64::MAX && *b <= now && now - *b < BUCKETS)
            .map(|(_, n)| n)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(percent: u8, min_count: u32) -> RetryBudget {
        let config = coxswain_ir::RetryBudget {
            policy: "default/p".into(),
            percent,
            interval_ms: 10_000,
            min_count,
            min_interval_ms: 1_000,
        };
        RetryBudget::new(&config, Instant::now())
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stay_within_the_percentage_of_attempts() {
        let b = budget(20, 1);
        let now = Instant::now();
        for _ in 0..100 {
            b.first_attempt(now);
        }
        let allowed = (0..100).filter(|_| b.try_retry(now)).count();
        // 25 retries of 125 attempts are 20%; the 26th would be 26 of 126.
        assert_eq!(allowed, 25);
    }

    #[tokio::test(start_paused = true)]
    async fn the_minimum_rate_allows_retries_on_a_quiet_backend() {
        let b = budget(20, 3);
        let now = Instant::now();
        b.first_attempt(now);
        let allowed = (0..10).filter(|_| b.try_retry(now)).count();
        assert_eq!(allowed, 3, "three per second whatever the budget");
        // A second later the minimum rate allows three more.
        let later = now + Duration::from_millis(1_000);
        assert_eq!((0..10).filter(|_| b.try_retry(later)).count(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn old_traffic_leaves_the_window() {
        let b = budget(50, 1);
        let t0 = Instant::now();
        for _ in 0..10 {
            b.first_attempt(t0);
        }
        assert_eq!((0..20).filter(|_| b.try_retry(t0)).count(), 10);
        // Eleven seconds on, none of that counts: one attempt, one retry
        // (the minimum rate), then 50% of 2 is 1 retry already made.
        let later = t0 + Duration::from_secs(11);
        b.first_attempt(later);
        assert!(b.try_retry(later));
        assert!(!b.try_retry(later));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_percent_leaves_only_the_minimum_rate() {
        let b = budget(0, 1);
        let now = Instant::now();
        for _ in 0..1000 {
            b.first_attempt(now);
        }
        assert_eq!((0..10).filter(|_| b.try_retry(now)).count(), 1);
    }
}
