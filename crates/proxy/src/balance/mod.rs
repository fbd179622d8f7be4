//! Endpoint choice for one cluster: the policy's algorithm (round robin,
//! least requests in flight, latency EWMA, rendezvous hashing), sticky
//! sessions, and the circuit breakers, which take an open endpoint out of
//! the choice. Allocation-free for clusters of up to 64 endpoints.

pub mod endpoint;
pub mod held;
pub mod key;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::HeaderValue;
use tokio::time::Instant;

use coxswain_ir::{Balancer, Persistence};

pub use endpoint::{Attempt, Endpoint};
pub use key::RequestKey;

/// A cluster's algorithm, sticky-session rule and round-robin cursor.
#[derive(Debug, Default)]
pub struct Balance {
    algorithm: Balancer,
    persistence: Option<Persistence>,
    cursor: AtomicUsize,
}

/// Who pins clients to endpoints for one pick.
#[derive(Clone, Copy, Debug)]
pub enum Stickiness {
    /// The cluster's CoxswainBackendPolicy, if it asks for sticky sessions.
    Policy,
    /// The route rule's own session persistence, which takes precedence:
    /// the endpoint its token names (by address hash), if any.
    Route(Option<u64>),
}

/// What [`Balance::pick`] found.
#[derive(Debug)]
pub enum Pick {
    Chosen(Chosen),
    /// The cluster has no endpoints.
    Empty,
    /// Every endpoint's circuit breaker is open.
    AllOpen,
}

#[derive(Debug)]
pub struct Chosen {
    pub attempt: Attempt,
    /// A `Set-Cookie` pinning the client here (Cookie persistence, when
    /// the request did not already name this endpoint).
    pub set_cookie: Option<HeaderValue>,
}

impl Balance {
    pub fn new(algorithm: Balancer, persistence: Option<Persistence>) -> Self {
        Balance {
            algorithm,
            persistence,
            cursor: AtomicUsize::new(0),
        }
    }

    /// Picks an endpoint for `key`, avoiding those in `tried` (earlier
    /// attempts of the same request) unless nothing else is left, and
    /// those whose breaker refuses the request.
    pub fn pick(
        &self,
        endpoints: &[Arc<Endpoint>],
        key: &RequestKey<'_>,
        tried: &[std::net::SocketAddr],
        stickiness: Stickiness,
        now: Instant,
    ) -> Pick {
        if endpoints.is_empty() {
            return Pick::Empty;
        }
        let mut out = Mask::new(endpoints.len());
        let untried = endpoints.iter().any(|e| !tried.contains(&e.address));
        for (i, e) in endpoints.iter().enumerate() {
            if untried && tried.contains(&e.address) {
                out.set(i);
            }
        }
        let (mut preferred, pinned) = match stickiness {
            Stickiness::Policy => self.preferred(endpoints, key),
            // The route issues its own tokens: no policy cookie.
            Stickiness::Route(hash) => {
                let at = hash.and_then(|h| endpoints.iter().position(|e| e.hash == h));
                (at, at)
            }
        };
        let policy_cookie = matches!(stickiness, Stickiness::Policy);
        loop {
            let choice = preferred
                .take()
                .filter(|i| !out.get(*i))
                .or_else(|| self.choose(endpoints, key, &out));
            let Some(i) = choice else {
                return Pick::AllOpen;
            };
            let Some(endpoint) = endpoints.get(i) else {
                return Pick::AllOpen;
            };
            match endpoint.admit(now) {
                Some(probe) => {
                    let set_cookie = policy_cookie
                        .then(|| self.set_cookie(endpoint, pinned == Some(i)))
                        .flatten();
                    return Pick::Chosen(Chosen {
                        attempt: Attempt::start(endpoint.clone(), probe, now),
                        set_cookie,
                    });
                }
                None => out.set(i),
            }
        }
    }

    /// The endpoint sticky sessions ask for, and whether the request's own
    /// cookie named it (then no new cookie is needed).
    fn preferred(
        &self,
        endpoints: &[Arc<Endpoint>],
        key: &RequestKey<'_>,
    ) -> (Option<usize>, Option<usize>) {
        match &self.persistence {
            None => (None, None),
            Some(Persistence::Cookie { name }) => {
                let pinned = key
                    .cookie(name)
                    .and_then(|token| endpoints.iter().position(|e| e.has_token(token)));
                (pinned, pinned)
            }
            Some(Persistence::Header { name }) => {
                let hash = key.header(name).map(key::fnv1a);
                (
                    hash.and_then(|h| rendezvous(endpoints, h, &Mask::new(0))),
                    None,
                )
            }
        }
    }

    fn set_cookie(&self, endpoint: &Endpoint, already_pinned: bool) -> Option<HeaderValue> {
        match &self.persistence {
            Some(Persistence::Cookie { name }) if !already_pinned => {
                HeaderValue::from_str(&format!("{name}={}; Path=/; HttpOnly", endpoint.token()))
                    .ok()
            }
            _ => None,
        }
    }

    /// The algorithm's choice among the endpoints not in `out`.
    fn choose(
        &self,
        endpoints: &[Arc<Endpoint>],
        key: &RequestKey<'_>,
        out: &Mask,
    ) -> Option<usize> {
        let n = endpoints.len();
        match &self.algorithm {
            Balancer::Hash(attribute) => match key.hash(attribute) {
                Some(h) => rendezvous(endpoints, h, out),
                None => self.round_robin(n, out),
            },
            Balancer::RoundRobin => self.round_robin(n, out),
            Balancer::LeastConn => self.lowest(n, out, |i| {
                endpoints
                    .get(i)
                    .map_or(u64::MAX, |e| u64::from(e.in_flight()))
            }),
            // Lowest latency, weighted by requests in flight so one fast
            // endpoint is not sent everything at once; unsampled first.
            Balancer::Ewma => self.lowest(n, out, |i| {
                endpoints.get(i).map_or(u64::MAX, |e| match e.latency_us() {
                    0 => 0,
                    l => l.saturating_mul(u64::from(e.in_flight()) + 1),
                })
            }),
        }
    }

    fn round_robin(&self, n: usize, out: &Mask) -> Option<usize> {
        let start = self.cursor.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|k| (start.wrapping_add(k)) % n)
            .find(|i| !out.get(*i))
    }

    /// The endpoint with the lowest `cost`; ties go round robin.
    fn lowest(&self, n: usize, out: &Mask, cost: impl Fn(usize) -> u64) -> Option<usize> {
        let start = self.cursor.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|k| (start.wrapping_add(k)) % n)
            .filter(|i| !out.get(*i))
            .min_by_key(|i| cost(*i))
    }
}

/// The highest-scoring endpoint for `hash` among those not in `out`.
fn rendezvous(endpoints: &[Arc<Endpoint>], hash: u64, out: &Mask) -> Option<usize> {
    endpoints
        .iter()
        .enumerate()
        .filter(|(i, _)| !out.get(*i))
        .max_by_key(|(_, e)| key::score(hash, e.hash))
        .map(|(i, _)| i)
}

/// The endpoints a request's earlier attempts used, kept inline (no
/// allocation per request); past [`Tried::CAPACITY`] the oldest are kept.
#[derive(Clone, Copy, Debug)]
pub struct Tried {
    addrs: [std::net::SocketAddr; Tried::CAPACITY],
    len: usize,
}

impl Default for Tried {
    fn default() -> Self {
        Tried {
            addrs: [std::net::SocketAddr::from(([0, 0, 0, 0], 0)); Tried::CAPACITY],
            len: 0,
        }
    }
}

impl Tried {
    pub const CAPACITY: usize = 4;

    pub fn push(&mut self, address: std::net::SocketAddr) {
        if let Some(slot) = self.addrs.get_mut(self.len) {
            *slot = address;
            self.len += 1;
        }
    }

    pub fn as_slice(&self) -> &[std::net::SocketAddr] {
        self.addrs.get(..self.len).unwrap_or_default()
    }
}

/// Endpoints taken out of one choice: inline up to 64, else on the heap.
#[derive(Debug)]
enum Mask {
    Inline(u64),
    Heap(Vec<bool>),
}

impl Mask {
    fn new(n: usize) -> Self {
        if n <= 64 {
            Mask::Inline(0)
        } else {
            Mask::Heap(vec![false; n])
        }
    }

    fn set(&mut self, i: usize) {
        match self {
            Mask::Inline(bits) if i < 64 => *bits |= 1 << i,
            Mask::Inline(_) => {}
            Mask::Heap(v) => {
                if let Some(b) = v.get_mut(i) {
                    *b = true;
                }
            }
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Mask::Inline(bits) => i < 64 && bits & (1 << i) != 0,
            Mask::Heap(v) => v.get(i).copied().unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests;
