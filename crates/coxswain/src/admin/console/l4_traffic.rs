//! Live connection rates per L4 route (TCPRoute, TLSRoute, UDPRoute), from
//! the same scrape as the HTTP rates: connections (UDP: sessions) opened,
//! open now, failed backend connects, and bytes each way.

use serde::Serialize;

use super::scrape::Sample;

const CONNECTIONS: &str = "coxswain_proxy_l4_connections_total";
const ACTIVE: &str = "coxswain_proxy_l4_active_connections";
const CONNECT_ERRORS: &str = "coxswain_proxy_l4_connect_errors_total";
const BYTES: &str = "coxswain_proxy_l4_bytes_total";

/// One L4 route label's counts at one instant (all cumulative but `active`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct L4Counts {
    connections: f64,
    active: f64,
    connect_errors: f64,
    bytes_in: f64,
    bytes_out: f64,
}

impl L4Counts {
    /// Adds `sample` when it is an L4 series; `false` when it is not one.
    pub fn add(&mut self, sample: &Sample) -> bool {
        let slot = match sample.name.as_str() {
            CONNECTIONS => &mut self.connections,
            ACTIVE => &mut self.active,
            CONNECT_ERRORS => &mut self.connect_errors,
            BYTES if sample.label("direction") == "in" => &mut self.bytes_in,
            BYTES => &mut self.bytes_out,
            _ => return false,
        };
        *slot += sample.value;
        true
    }

    /// Whether `name` is one of the series [`L4Counts::add`] takes.
    pub fn is_l4(name: &str) -> bool {
        matches!(name, CONNECTIONS | ACTIVE | CONNECT_ERRORS | BYTES)
    }
}

/// What one L4 route did over the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct L4Rates {
    pub connections: u64,
    pub connections_per_second: f64,
    /// Open at the end of the window.
    pub active: u64,
    pub connect_errors: u64,
    pub bytes_in_per_second: f64,
    pub bytes_out_per_second: f64,
}

/// The window's rates from the counts at its start and end.
pub fn l4_rates(before: &L4Counts, now: &L4Counts, window: f64) -> L4Rates {
    let delta = |a: f64, b: f64| (b - a).max(0.0);
    let per_second = |n: f64| if window > 0.0 { n / window } else { 0.0 };
    let connections = delta(before.connections, now.connections);
    L4Rates {
        connections: connections as u64,
        connections_per_second: per_second(connections),
        active: now.active.max(0.0) as u64,
        connect_errors: delta(before.connect_errors, now.connect_errors) as u64,
        bytes_in_per_second: per_second(delta(before.bytes_in, now.bytes_in)),
        bytes_out_per_second: per_second(delta(before.bytes_out, now.bytes_out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::console::scrape::parse;

    fn counts(text: &str) -> L4Counts {
        let mut counts = L4Counts::default();
        for sample in parse(text) {
            counts.add(&sample);
        }
        counts
    }

    #[test]
    fn rates_are_deltas_over_the_window_and_active_is_the_latest() {
        let before = counts(&format!(
            "{CONNECTIONS}{{route=\"ns/t/0\"}} 10\n{ACTIVE}{{route=\"ns/t/0\"}} 4\n\
             {BYTES}{{route=\"ns/t/0\",direction=\"in\"}} 1000\n\
             {BYTES}{{route=\"ns/t/0\",direction=\"out\"}} 5000\n"
        ));
        let now = counts(&format!(
            "{CONNECTIONS}{{route=\"ns/t/0\"}} 30\n{ACTIVE}{{route=\"ns/t/0\"}} 2\n\
             {CONNECT_ERRORS}{{route=\"ns/t/0\"}} 1\n\
             {BYTES}{{route=\"ns/t/0\",direction=\"in\"}} 3000\n\
             {BYTES}{{route=\"ns/t/0\",direction=\"out\"}} 45000\n"
        ));
        let rates = l4_rates(&before, &now, 10.0);
        assert_eq!(
            rates,
            L4Rates {
                connections: 20,
                connections_per_second: 2.0,
                active: 2,
                connect_errors: 1,
                bytes_in_per_second: 200.0,
                bytes_out_per_second: 4000.0,
            }
        );
        assert_eq!(l4_rates(&now, &now, 0.0).connections_per_second, 0.0);
    }
}
