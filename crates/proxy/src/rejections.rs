//! Requests the proxy refuses itself before routing (bad paths, framing
//! errors, limits), counted by reason in
//! `coxswain_proxy_rejected_requests_total{reason}`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::normalize::PathError;

/// Why a request was refused before it reached a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    Path(PathError),
}

impl RejectReason {
    const ALL: [RejectReason; 3] = [
        RejectReason::Path(PathError::MalformedEscape),
        RejectReason::Path(PathError::ForbiddenCharacter),
        RejectReason::Path(PathError::EscapedSlash),
    ];

    fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    pub fn label(self) -> &'static str {
        match self {
            RejectReason::Path(PathError::MalformedEscape) => "path_malformed_escape",
            RejectReason::Path(PathError::ForbiddenCharacter) => "path_forbidden_character",
            RejectReason::Path(PathError::EscapedSlash) => "path_escaped_slash",
        }
    }
}

/// One counter per [`RejectReason`].
#[derive(Debug, Default)]
pub struct Rejections([AtomicU64; RejectReason::ALL.len()]);

impl Rejections {
    pub fn record(&self, reason: RejectReason) {
        if let Some(counter) = self.0.get(reason.index()) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn render(&self, out: &mut String) {
        let name = "coxswain_proxy_rejected_requests_total";
        let _ = writeln!(
            out,
            "# HELP {name} Requests refused before routing, by reason.\n# TYPE {name} counter"
        );
        for (reason, counter) in RejectReason::ALL.iter().zip(&self.0) {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{}\"}} {}",
                reason.label(),
                counter.load(Ordering::Relaxed)
            );
        }
    }
}
