//! `coxswain_proxy_proxy_protocol_refused_total{reason}`: connections closed
//! because their PROXY protocol header was missing, malformed, cut short or
//! late.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::proxy_header::Refused;

const REASONS: [&str; 4] = ["malformed", "missing", "closed", "timeout"];

#[derive(Debug, Default)]
pub struct ProxyProtocolMetrics {
    /// By reason, in [`REASONS`] order.
    refused: [AtomicU64; 4],
}

impl ProxyProtocolMetrics {
    pub fn refused(&self, why: Refused) {
        let i = match why {
            Refused::Malformed(_) => 0,
            Refused::Missing => 1,
            Refused::Closed => 2,
            Refused::TimedOut => 3,
        };
        if let Some(c) = self.refused.get(i) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn render(&self, out: &mut String) {
        let name = "coxswain_proxy_proxy_protocol_refused_total";
        let _ = writeln!(
            out,
            "# HELP {name} Connections closed for their PROXY protocol header, by reason.\n# TYPE {name} counter"
        );
        for (reason, count) in REASONS.iter().zip(&self.refused) {
            let n = count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{reason=\"{reason}\"}} {n}");
        }
    }
}
