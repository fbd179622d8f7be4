//! Watch reconnect backoff. kube-runtime's default (0.8 s doubling up to
//! 30 s) is tuned for many clients sparing a struggling API server; a
//! gateway wants its routes back soon after the API server returns, and runs
//! only a handful of watches, so it doubles from 100 ms up to 2 s.

use std::time::Duration;

use kube::runtime::utils::Backoff;

const FIRST: Duration = Duration::from_millis(100);
const CAP: Duration = Duration::from_secs(2);

/// Exponential delays from [`FIRST`], doubling, capped at [`CAP`]; reset
/// by the stream after a successful event.
#[derive(Clone, Debug)]
pub struct ReconnectBackoff {
    next: Duration,
}

impl Default for ReconnectBackoff {
    fn default() -> Self {
        ReconnectBackoff { next: FIRST }
    }
}

impl Iterator for ReconnectBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(CAP);
        Some(delay)
    }
}

impl Backoff for ReconnectBackoff {
    fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_the_cap_and_resets() {
        let mut backoff = ReconnectBackoff::default();
        let delays: Vec<u128> = backoff.by_ref().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST));
    }
}
