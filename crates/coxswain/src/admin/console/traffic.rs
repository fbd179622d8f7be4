//! Live request rates and latency percentiles per route, from the proxy's
//! cumulative counters and histograms. Each console API call takes a fresh
//! snapshot and compares it with one kept from about a minute earlier; a
//! snapshot is kept at most every [`KEEP_EVERY`], so the work happens only
//! while someone is looking and nothing runs in the background.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::l4_traffic::{L4Counts, L4Rates, l4_rates};
use super::scrape::Sample;

/// How far back rates look, at least (until the process is that old).
pub const WINDOW: Duration = Duration::from_secs(60);
/// The spacing of kept snapshots.
pub const KEEP_EVERY: Duration = Duration::from_secs(5);

const REQUESTS: &str = "coxswain_proxy_requests_total";
const BUCKETS: &str = "coxswain_proxy_request_duration_seconds_bucket";

/// One route label's cumulative counts.
#[derive(Clone, Debug, Default, PartialEq)]
struct Counts {
    requests: f64,
    server_errors: f64,
    /// (upper bound in seconds, cumulative count), ascending; `+Inf` last.
    buckets: Vec<(f64, f64)>,
}

/// Cumulative counts of every route label at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    at: Instant,
    routes: BTreeMap<String, Counts>,
    l4: BTreeMap<String, L4Counts>,
}

impl Snapshot {
    pub fn empty(at: Instant) -> Self {
        Snapshot {
            at,
            routes: BTreeMap::new(),
            l4: BTreeMap::new(),
        }
    }

    pub fn from_samples(at: Instant, samples: &[Sample]) -> Self {
        let mut routes: BTreeMap<String, Counts> = BTreeMap::new();
        let mut l4: BTreeMap<String, L4Counts> = BTreeMap::new();
        for s in samples {
            let route = s.label("route");
            if route.is_empty() {
                continue; // requests no route matched
            }
            if L4Counts::is_l4(&s.name) {
                l4.entry(route.to_string()).or_default().add(s);
            } else if s.name == REQUESTS {
                let counts = routes.entry(route.to_string()).or_default();
                counts.requests += s.value;
                if s.label("status").starts_with('5') {
                    counts.server_errors += s.value;
                }
            } else if s.name == BUCKETS {
                let bound = match s.label("le") {
                    "+Inf" => f64::INFINITY,
                    le => match le.parse() {
                        Ok(bound) => bound,
                        Err(_) => continue,
                    },
                };
                let counts = routes.entry(route.to_string()).or_default();
                counts.buckets.push((bound, s.value));
            }
        }
        for counts in routes.values_mut() {
            counts.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        Snapshot { at, routes, l4 }
    }
}

/// What one route did over the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteRates {
    pub requests: u64,
    pub requests_per_second: f64,
    /// 5xx answers over all answers; `None` without requests.
    pub error_ratio: Option<f64>,
    /// Latency percentiles in seconds (until response headers), estimated
    /// from the histogram buckets as Prometheus' `histogram_quantile` does.
    pub p50_seconds: Option<f64>,
    pub p90_seconds: Option<f64>,
    pub p99_seconds: Option<f64>,
}

/// Rates of every route label over one window.
#[derive(Clone, Debug, PartialEq)]
pub struct Rates {
    pub window_seconds: f64,
    pub routes: BTreeMap<String, RouteRates>,
    /// L4 routes (TCPRoute, TLSRoute, UDPRoute): connections, not requests.
    pub l4: BTreeMap<String, L4Rates>,
}

/// Snapshots kept for comparison; shared by every console viewer.
pub struct Sampler {
    kept: Mutex<VecDeque<Snapshot>>, // admin-only; never on the request path
}

impl Sampler {
    /// Starts with zero counts at `start`: the process's own start, so the
    /// first look reports rates since then.
    pub fn new(start: Instant) -> Self {
        Sampler {
            kept: Mutex::new(VecDeque::from([Snapshot::empty(start)])),
        }
    }

    /// Rates from the oldest kept snapshot still needed to `now`.
    pub fn rates(&self, now: Snapshot) -> Rates {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        // Keep the newest snapshot that is at least WINDOW old as the base.
        while kept
            .get(1)
            .is_some_and(|next| now.at.saturating_duration_since(next.at) >= WINDOW)
        {
            kept.pop_front();
        }
        let rates = match kept.front() {
            Some(base) => compare(base, &now),
            None => compare(&Snapshot::empty(now.at), &now),
        };
        let due = kept
            .back()
            .is_none_or(|last| now.at.saturating_duration_since(last.at) >= KEEP_EVERY);
        if due {
            kept.push_back(now);
        }
        rates
    }
}

fn compare(base: &Snapshot, now: &Snapshot) -> Rates {
    let window = now.at.saturating_duration_since(base.at).as_secs_f64();
    Rates {
        window_seconds: window,
        routes: per_label(&base.routes, &now.routes, window, route_rates),
        l4: per_label(&base.l4, &now.l4, window, l4_rates),
    }
}

/// `rates` of every label in `now` against `base` (a label new since
/// `base` counts from zero).
fn per_label<C: Default, R>(
    base: &BTreeMap<String, C>,
    now: &BTreeMap<String, C>,
    window: f64,
    rates: fn(&C, &C, f64) -> R,
) -> BTreeMap<String, R> {
    let empty = C::default();
    now.iter()
        .map(|(label, counts)| {
            let before = base.get(label).unwrap_or(&empty);
            (label.clone(), rates(before, counts, window))
        })
        .collect()
}

fn route_rates(before: &Counts, now: &Counts, window: f64) -> RouteRates {
    let requests = (now.requests - before.requests).max(0.0);
    let errors = (now.server_errors - before.server_errors).max(0.0);
    let buckets: Vec<(f64, f64)> = now
        .buckets
        .iter()
        .map(|&(bound, n)| {
            let earlier = before
                .buckets
                .iter()
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, n)| *n);
            (bound, (n - earlier).max(0.0))
        })
        .collect();
    RouteRates {
        requests: requests as u64,
        requests_per_second: if window > 0.0 { requests / window } else { 0.0 },
        error_ratio: (requests > 0.0).then(|| errors / requests),
        p50_seconds: quantile(0.5, &buckets),
        p90_seconds: quantile(0.9, &buckets),
        p99_seconds: quantile(0.99, &buckets),
    }
}

/// The `q` quantile of cumulative `buckets`, interpolated linearly inside
/// the bucket it falls in; a rank in the `+Inf` bucket reports the largest
/// finite bound. `None` when the window saw no request.
pub fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let inside = count - lower.1;
            let fraction = if inside > 0.0 {
                (rank - lower.1) / inside
            } else {
                1.0
            };
            return Some(lower.0 + (bound - lower.0) * fraction);
        }
        lower = (bound, count);
    }
    Some(lower.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::console::scrape::parse;

    fn snapshot(at: Instant, ok: u32, errors: u32, fast: u32, slow: u32) -> Snapshot {
        let total = fast + slow;
        let text = format!(
            "{REQUESTS}{{route=\"ns/r/0\",status=\"200\",upstream=\"u\"}} {ok}\n\
             {REQUESTS}{{route=\"ns/r/0\",status=\"503\",upstream=\"u\"}} {errors}\n\
             {REQUESTS}{{route=\"\",status=\"404\",upstream=\"\"}} 9\n\
             {BUCKETS}{{route=\"ns/r/0\",le=\"0.01\"}} {fast}\n\
             {BUCKETS}{{route=\"ns/r/0\",le=\"0.1\"}} {total}\n\
             {BUCKETS}{{route=\"ns/r/0\",le=\"+Inf\"}} {total}\n"
        );
        Snapshot::from_samples(at, &parse(&text))
    }

    #[test]
    fn quantiles_interpolate_within_buckets() {
        let buckets = [(0.01, 50.0), (0.1, 100.0), (f64::INFINITY, 100.0)];
        assert_eq!(quantile(0.5, &buckets), Some(0.01));
        let p90 = quantile(0.9, &buckets).unwrap();
        assert!((p90 - 0.082).abs() < 1e-9, "{p90}");
        assert_eq!(
            quantile(0.99, &[(0.5, 1.0), (f64::INFINITY, 100.0)]),
            Some(0.5)
        );
        assert_eq!(quantile(0.5, &[(0.5, 0.0), (f64::INFINITY, 0.0)]), None);
    }

    #[test]
    fn first_look_counts_since_start_then_a_window_of_kept_snapshots() {
        let start = Instant::now();
        let sampler = Sampler::new(start);
        let first = sampler.rates(snapshot(start + Duration::from_secs(10), 18, 2, 20, 0));
        assert_eq!(first.window_seconds, 10.0);
        let r = &first.routes["ns/r/0"];
        assert_eq!(r.requests, 20);
        assert_eq!(r.requests_per_second, 2.0);
        assert_eq!(r.error_ratio, Some(0.1));
        assert!(
            !first.routes.contains_key(""),
            "unrouted requests are not a route"
        );

        // 70s in: the start is more than a window ago, the 10s one is the base.
        let later = sampler.rates(snapshot(start + Duration::from_secs(70), 78, 2, 20, 60));
        assert_eq!(later.window_seconds, 60.0);
        let r = &later.routes["ns/r/0"];
        assert_eq!((r.requests, r.error_ratio), (60, Some(0.0)));
        assert_eq!(r.requests_per_second, 1.0);
        // Every request of this window took between 10ms and 100ms.
        assert!(r.p50_seconds.unwrap() > 0.01 && r.p99_seconds.unwrap() <= 0.1);
    }

    #[test]
    fn snapshots_are_kept_at_most_every_few_seconds() {
        let start = Instant::now();
        let sampler = Sampler::new(start);
        for second in 1..=20 {
            sampler.rates(snapshot(start + Duration::from_secs(second), 0, 0, 0, 0));
        }
        let kept = sampler.kept.lock().unwrap().len();
        assert_eq!(kept, 5, "start, 5s, 10s, 15s, 20s");
    }
}
