//! Overload protection: connection limits (global and per listener socket)
//! applied at accept, so the proxy stops accepting instead of running out
//! of file descriptors, and an optional limit on requests in flight beyond
//! which requests are shed with 503. The admin listener is a separate
//! server and keeps answering.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Limits; 0 means none.
#[derive(Clone, Copy, Debug)]
pub struct OverloadLimits {
    pub max_connections: usize,
    pub max_connections_per_listener: usize,
    pub max_requests_in_flight: usize,
}

impl Default for OverloadLimits {
    fn default() -> Self {
        OverloadLimits {
            max_connections: 50_000,
            max_connections_per_listener: 0,
            max_requests_in_flight: 0,
        }
    }
}

/// Shared by every listener of the proxy.
#[derive(Debug)]
pub struct Overload {
    pub limits: OverloadLimits,
    connections: Arc<Semaphore>,
    in_flight: AtomicUsize,
}

/// A request counted as in flight until dropped.
pub struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn semaphore(limit: usize) -> Arc<Semaphore> {
    let permits = if limit == 0 {
        Semaphore::MAX_PERMITS
    } else {
        limit
    };
    Arc::new(Semaphore::new(permits.min(Semaphore::MAX_PERMITS)))
}

impl Overload {
    pub fn new(limits: OverloadLimits) -> Self {
        Overload {
            connections: semaphore(limits.max_connections),
            in_flight: AtomicUsize::new(0),
            limits,
        }
    }

    /// A semaphore for one listener socket's connections.
    pub fn listener_semaphore(&self) -> Arc<Semaphore> {
        semaphore(self.limits.max_connections_per_listener)
    }

    /// Waits for room for one more connection (global and `listener`).
    pub async fn connection(
        &self,
        listener: &Arc<Semaphore>,
    ) -> Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let global = self.connections.clone().acquire_owned().await.ok()?;
        let local = listener.clone().acquire_owned().await.ok()?;
        Some((global, local))
    }

    /// Counts a request in flight, or `None` when over the limit.
    pub fn admit(&self) -> Option<InFlight<'_>> {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        let guard = InFlight(&self.in_flight);
        let limit = self.limits.max_requests_in_flight;
        (limit == 0 || now <= limit).then_some(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sheds_above_the_in_flight_limit_and_recovers() {
        let overload = Overload::new(OverloadLimits {
            max_requests_in_flight: 2,
            ..OverloadLimits::default()
        });
        let a = overload.admit();
        let b = overload.admit();
        assert!(a.is_some() && b.is_some());
        assert!(overload.admit().is_none());
        drop(a);
        assert!(overload.admit().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_listener_waits_for_a_free_connection() {
        let overload = Overload::new(OverloadLimits {
            max_connections_per_listener: 1,
            ..OverloadLimits::default()
        });
        let listener = overload.listener_semaphore();
        let first = overload.connection(&listener).await;
        assert!(first.is_some());
        let second = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            overload.connection(&listener),
        );
        assert!(
            second.await.is_err(),
            "no second permit while the first is held"
        );
        drop(first);
        assert!(overload.connection(&listener).await.is_some());
    }
}
