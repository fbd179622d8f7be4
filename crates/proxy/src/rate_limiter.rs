//! A lock-free table of token buckets (GCRA: each bucket is one atomic
//! "theoretical arrival time"), bounded in memory whatever the number of
//! clients.
//!
//! A key hashes to a home slot and probes [`PROBES`] slots from there. A
//! slot belongs to the key whose tag it holds; a slot whose bucket is full
//! again (idle since its last request drained) may be taken by another key.
//! When every probed slot is live and taken, the key shares its home
//! slot's bucket: under a flood of distinct keys limiting gets stricter,
//! never looser.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// Slots probed for a key.
const PROBES: usize = 8;

/// What one request may do.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Allowed {
        /// Requests the bucket still holds.
        remaining: u64,
        /// Until the bucket is full again.
        full_in: Duration,
    },
    Limited {
        retry_after: Duration,
    },
}

struct Slot {
    /// The key's tag (never 0); 0 is a slot nobody took yet.
    tag: AtomicU32,
    /// Microseconds since `start` at which the bucket is full again.
    tat: AtomicU64,
}

pub struct RateLimiter {
    /// One token's worth of time.
    interval_us: u64,
    /// How far ahead of now the bucket may run: `(burst - 1)` intervals.
    tolerance_us: u64,
    start: Instant,
    hasher: std::collections::hash_map::RandomState,
    slots: Box<[Slot]>,
    /// Never used: `slots` is never empty; here so no lookup can fail.
    fallback: Slot,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("interval_us", &self.interval_us)
            .field("tolerance_us", &self.tolerance_us)
            .field("slots", &self.slots.len())
            .finish()
    }
}

impl RateLimiter {
    /// `requests` per `period`, `burst` at once, with room for about
    /// `slots` keys (rounded up to a power of two).
    pub fn new(requests: u32, period: Duration, burst: u32, slots: usize, now: Instant) -> Self {
        let interval_us = (period.as_micros() as u64 / u64::from(requests.max(1))).max(1);
        let slots = slots.max(PROBES).next_power_of_two();
        RateLimiter {
            interval_us,
            tolerance_us: interval_us.saturating_mul(u64::from(burst.max(1)) - 1),
            start: now,
            hasher: std::collections::hash_map::RandomState::new(),
            slots: (0..slots)
                .map(|_| Slot {
                    tag: AtomicU32::new(0),
                    tat: AtomicU64::new(0),
                })
                .collect(),
            fallback: Slot {
                tag: AtomicU32::new(0),
                tat: AtomicU64::new(0),
            },
        }
    }

    /// Takes a token from `key`'s bucket if it has one.
    pub fn check(&self, key: impl Hash, now: Instant) -> Decision {
        let hash = self.hasher.hash_one(key);
        // +1: 0 is "before any request" for a fresh slot.
        let now_us = now.saturating_duration_since(self.start).as_micros() as u64 + 1;
        let slot = self.slot_for(hash, now_us);
        loop {
            let tat = slot.tat.load(Ordering::Acquire);
            let base = tat.max(now_us);
            let ahead = base - now_us;
            if ahead > self.tolerance_us {
                return Decision::Limited {
                    retry_after: Duration::from_micros(ahead - self.tolerance_us),
                };
            }
            let next = base + self.interval_us;
            if slot
                .tat
                .compare_exchange_weak(tat, next, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let used = next - now_us;
                let capacity = self.tolerance_us + self.interval_us;
                return Decision::Allowed {
                    remaining: (capacity - used) / self.interval_us,
                    full_in: Duration::from_micros(used),
                };
            }
        }
    }

    fn slot_for(&self, hash: u64, now_us: u64) -> &Slot {
        let mask = self.slots.len() - 1;
        let tag = ((hash >> 32) as u32).max(1);
        let home = (hash as usize) & mask;
        let mut free = None;
        let mut home_slot = None;
        for i in 0..PROBES {
            let Some(slot) = self.slots.get((home + i) & mask) else {
                break;
            };
            home_slot = home_slot.or(Some(slot));
            let owner = slot.tag.load(Ordering::Acquire);
            if owner == tag {
                return slot;
            }
            // Unused, or idle with a full bucket: nothing of its owner's
            // state would be lost by taking it.
            if free.is_none() && (owner == 0 || slot.tat.load(Ordering::Acquire) <= now_us) {
                free = Some((slot, owner));
            }
        }
        if let Some((slot, owner)) = free
            && slot
                .tag
                .compare_exchange(owner, tag, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return slot;
        }
        // Every probe live: share the home slot (stricter, never looser).
        match home_slot {
            Some(slot) => slot,
            None => &self.fallback,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(requests: u32, per: Duration, burst: u32, slots: usize) -> (RateLimiter, Instant) {
        let now = Instant::now();
        (RateLimiter::new(requests, per, burst, slots, now), now)
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_takes_its_burst_then_one_per_interval() {
        let (l, t0) = limiter(10, Duration::from_secs(1), 3, 64);
        for remaining in [2, 1, 0] {
            assert!(
                matches!(l.check("a", t0), Decision::Allowed { remaining: r, .. } if r == remaining)
            );
        }
        assert_eq!(
            l.check("a", t0),
            Decision::Limited {
                retry_after: Duration::from_millis(100)
            }
        );
        // One interval later there is one token.
        let t1 = t0 + Duration::from_millis(100);
        assert!(matches!(
            l.check("a", t1),
            Decision::Allowed { remaining: 0, .. }
        ));
        assert!(matches!(l.check("a", t1), Decision::Limited { .. }));
        // Other keys have their own buckets.
        assert!(matches!(
            l.check("b", t1),
            Decision::Allowed { remaining: 2, .. }
        ));
        // Idle long enough, the bucket is full again.
        let later = t1 + Duration::from_secs(5);
        assert!(matches!(
            l.check("a", later),
            Decision::Allowed { remaining: 2, .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_reported_full_in_is_when_the_bucket_refills() {
        let (l, t0) = limiter(1, Duration::from_secs(60), 2, 64);
        assert_eq!(
            l.check(1u8, t0),
            Decision::Allowed {
                remaining: 1,
                full_in: Duration::from_secs(60)
            }
        );
        assert_eq!(
            l.check(1u8, t0),
            Decision::Allowed {
                remaining: 0,
                full_in: Duration::from_secs(120)
            }
        );
        assert_eq!(
            l.check(1u8, t0),
            Decision::Limited {
                retry_after: Duration::from_secs(60)
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_keys_never_loosens_the_limit_for_a_busy_one() {
        // A tiny table: most keys share slots; none gets more than its rate.
        let (l, t0) = limiter(1, Duration::from_secs(60), 1, 8);
        let mut allowed = 0;
        for round in 0..3 {
            for key in 0..1000u32 {
                if matches!(
                    l.check(key, t0 + Duration::from_millis(round)),
                    Decision::Allowed { .. }
                ) {
                    allowed += 1;
                }
            }
        }
        assert!(allowed <= 8, "{allowed} allowed with 8 slots of 1 token");
        assert!(allowed >= 1);
    }

    #[test]
    fn concurrent_takers_never_take_more_than_the_burst() {
        let now = Instant::now();
        let l = std::sync::Arc::new(RateLimiter::new(1, Duration::from_secs(3600), 100, 64, now));
        let taken: u32 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let l = l.clone();
                    s.spawn(move || {
                        (0..100)
                            .filter(|_| matches!(l.check("k", now), Decision::Allowed { .. }))
                            .count() as u32
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 100);
    }
}
