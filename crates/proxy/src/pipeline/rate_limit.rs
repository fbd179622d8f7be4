//! RateLimit (limits phase): a request its bucket has no token for is
//! answered 429 with `Retry-After`; every answer carries the IETF
//! `RateLimit-Policy` and `RateLimit` headers
//! (draft-ietf-httpapi-ratelimit-headers), so clients can pace
//! themselves.

use std::time::Duration;

use coxswain_ir::{RateLimit, RateLimitKey};
use http::{HeaderName, HeaderValue, StatusCode};
use tokio::time::Instant;

use super::Flow;
use super::context::RequestCtx;
use crate::http::body::plain;
use crate::rate_limiter::{Decision, RateLimiter};

pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// One RateLimit resource: its settings and its buckets (shared by the
/// rules using it; each rule's keys are its own).
#[derive(Debug)]
pub struct CompiledRateLimit {
    pub limit: RateLimit,
    pub buckets: RateLimiter,
    /// `"<name>";q=<requests>;w=<seconds>`.
    policy: Option<HeaderValue>,
}

/// Keys a per-client limit keeps buckets for before it starts sharing.
const CLIENT_SLOTS: usize = 16_384;

impl CompiledRateLimit {
    pub fn new(limit: &RateLimit) -> Self {
        let period = Duration::from_millis(limit.period_ms);
        let slots = match limit.key {
            RateLimitKey::Route => 64,
            _ => CLIENT_SLOTS,
        };
        let policy = HeaderValue::from_str(&format!(
            "{};q={};w={}",
            quoted(&limit.name),
            limit.requests,
            period.as_secs().max(1)
        ))
        .ok();
        CompiledRateLimit {
            buckets: RateLimiter::new(limit.requests, period, limit.burst, slots, Instant::now()),
            limit: limit.clone(),
            policy,
        }
    }
}

/// An RFC 8941 string.
fn quoted(name: &str) -> String {
    let escaped: String = name
        .chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

pub fn admit(limit: &CompiledRateLimit, rule: u64, ctx: &mut RequestCtx<'_>) -> Flow {
    let now = Instant::now();
    let decision = match &limit.limit.key {
        RateLimitKey::ClientIp => limit.buckets.check((rule, ctx.client), now),
        RateLimitKey::Route => limit.buckets.check(rule, now),
        RateLimitKey::Header(name) => {
            let value = ctx
                .parts
                .headers
                .get(name.as_str())
                .map(HeaderValue::as_bytes);
            limit.buckets.check((rule, value), now)
        }
    };
    let state = |remaining: u64, reset: Duration| {
        HeaderValue::from_str(&format!(
            "{};r={remaining};t={}",
            quoted(&limit.limit.name),
            ceil_secs(reset)
        ))
        .ok()
    };
    match decision {
        Decision::Allowed { remaining, full_in } => {
            if let Some(policy) = &limit.policy {
                ctx.plan.headers.push((RATELIMIT_POLICY, policy.clone()));
            }
            if let Some(value) = state(remaining, full_in) {
                ctx.plan.headers.push((RATELIMIT, value));
            }
            Flow::Next
        }
        Decision::Limited { retry_after } => {
            let mut response = plain(StatusCode::TOO_MANY_REQUESTS, "rate limited\n");
            let headers = response.headers_mut();
            headers.insert(
                http::header::RETRY_AFTER,
                HeaderValue::from(ceil_secs(retry_after)),
            );
            if let Some(policy) = &limit.policy {
                headers.insert(RATELIMIT_POLICY, policy.clone());
            }
            if let Some(value) = state(0, retry_after) {
                headers.insert(RATELIMIT, value);
            }
            Flow::Answer(response)
        }
    }
}

/// Whole seconds, rounded up (a client told 0 would retry at once).
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
