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
    /// Request target longer than the limit (414).
    UriTooLong,
    /// More requests in flight than the configured limit (503).
    Overloaded,
    /// The client's request body was malformed (bad chunk, truncated):
    /// 400, and the upstream request, if started, aborted.
    BodyFraming,
    /// The request body passed its route's RequestSizeLimit (413).
    BodyTooLarge,
    /// hyper refused the request head itself (malformed line or headers,
    /// conflicting framing headers, too large): 400/431 without a route.
    HeadParse,
}

impl RejectReason {
    const ALL: [RejectReason; 8] = [
        RejectReason::Path(PathError::MalformedEscape),
        RejectReason::Path(PathError::ForbiddenCharacter),
        RejectReason::Path(PathError::EscapedSlash),
        RejectReason::UriTooLong,
        RejectReason::Overloaded,
        RejectReason::BodyFraming,
        RejectReason::BodyTooLarge,
        RejectReason::HeadParse,
    ];

    fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    pub fn label(self) -> &'static str {
        match self {
            RejectReason::Path(PathError::MalformedEscape) => "path_malformed_escape",
            RejectReason::Path(PathError::ForbiddenCharacter) => "path_forbidden_character",
            RejectReason::Path(PathError::EscapedSlash) => "path_escaped_slash",
            RejectReason::UriTooLong => "uri_too_long",
            RejectReason::Overloaded => "overloaded",
            RejectReason::BodyFraming => "body_framing",
            RejectReason::BodyTooLarge => "body_too_large",
            RejectReason::HeadParse => "head_parse",
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
