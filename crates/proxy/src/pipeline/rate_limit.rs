//! RateLimit (limits phase): a request its bucket has no token for is
//! answered 429 with `Retry-After`; every answer carries the IETF
//! `RateLimit-Policy` and `RateLimit` headers
//! (draft-ietf-httpapi-ratelimit-headers), so clients can pace
//! themselves. Buckets are this process's own, or, in global mode, kept
//! in a Redis server shared by the fleet; a store that does not answer
//! in time gets the resource's `onStoreUnavailable` answer (admitted, or
//! 503), counted in a metric.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use coxswain_ir::{RateLimit, RateLimitKey, StoreUnavailable};
use http::{HeaderName, HeaderValue, StatusCode};
use tokio::time::Instant;

use super::Flow;
use super::context::RequestCtx;
use crate::global_rate_limiter::GlobalRateLimiter;
use crate::http::body::plain;
use crate::metrics::StoreErrors;
use crate::rate_limiter::{Decision, RateLimiter};
use crate::redis::Client;

pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// One RateLimit resource: its settings and its buckets (shared by the
/// rules using it; each rule's keys are its own).
#[derive(Debug)]
pub struct CompiledRateLimit {
    pub limit: RateLimit,
    /// Local mode's buckets (a token table in global mode, unused).
    pub buckets: RateLimiter,
    /// Global mode: the shared store.
    pub global: Option<GlobalRateLimiter>,
    /// `"<name>";q=<requests>;w=<seconds>`.
    policy: Option<HeaderValue>,
    /// The name as an RFC 8941 string, for each answer's `RateLimit`.
    quoted_name: String,
}

/// Keys a per-client limit keeps buckets for before it starts sharing.
const CLIENT_SLOTS: usize = 16_384;

/// Store connections by address, shared by the resources naming one.
pub type StoreClients = HashMap<String, Client>;

impl CompiledRateLimit {
    pub fn new(limit: &RateLimit, stores: &mut StoreClients) -> Self {
        let period = Duration::from_millis(limit.period_ms);
        let slots = match (&limit.key, &limit.global) {
            (_, Some(_)) => 8,
            (RateLimitKey::Route, None) => 64,
            _ => CLIENT_SLOTS,
        };
        let quoted_name = quoted(&limit.name);
        let policy = HeaderValue::from_str(&format!(
            "{quoted_name};q={};w={}",
            limit.requests,
            period.as_secs().max(1)
        ))
        .ok();
        let global = limit.global.as_ref().map(|g| {
            let client = stores
                .entry(g.address.clone())
                .or_insert_with(|| Client::new(&g.address))
                .clone();
            GlobalRateLimiter::new(client, limit.requests, period, limit.burst)
        });
        CompiledRateLimit {
            buckets: RateLimiter::new(limit.requests, period, limit.burst, slots, Instant::now()),
            global,
            limit: limit.clone(),
            policy,
            quoted_name,
        }
    }
}

/// A rule's use of a RateLimit: its own buckets within the resource's.
#[derive(Debug)]
pub struct RuleLimit {
    pub limit: Arc<CompiledRateLimit>,
    /// Sets this rule's local buckets apart from other rules'.
    rule: u64,
    /// Global mode: `coxswain:rl:<namespace>/<name>:<rule digest>:`, the
    /// start of this rule's keys in the store (the same on every proxy).
    prefix: Option<Box<str>>,
    errors: Arc<StoreErrors>,
}

impl RuleLimit {
    /// `label` names the rule (`namespace/route/index`).
    pub fn new(limit: Arc<CompiledRateLimit>, label: &str, errors: Arc<StoreErrors>) -> Self {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let prefix = limit.limit.global.as_ref().map(|g| {
            let digest = ring::digest::digest(&ring::digest::SHA256, label.as_bytes());
            format!(
                "coxswain:rl:{}:{}:",
                g.scope,
                hex(digest.as_ref().get(..8).unwrap_or_default())
            )
            .into_boxed_str()
        });
        RuleLimit {
            rule: BuildHasherDefault::<DefaultHasher>::default().hash_one(label),
            limit,
            prefix,
            errors,
        }
    }

    pub fn is_global(&self) -> bool {
        self.prefix.is_some()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// The request's header value or verified claim, for the keys that have
/// one; `None` (one shared bucket) when it has none.
fn keyed_value<'c>(key: &RateLimitKey, ctx: &'c RequestCtx<'_>) -> Option<Cow<'c, [u8]>> {
    use serde_json::Value;
    match key {
        RateLimitKey::Header(name) => ctx
            .parts
            .headers
            .get(name.as_str())
            .map(|v| Cow::Borrowed(v.as_bytes())),
        RateLimitKey::JwtClaim(name) => match ctx.claims.as_ref()?.get(name)? {
            Value::String(s) => Some(Cow::Borrowed(s.as_bytes())),
            Value::Number(n) => Some(Cow::Owned(n.to_string().into_bytes())),
            Value::Bool(b) => Some(Cow::Borrowed(if *b { b"true" } else { b"false" })),
            _ => None,
        },
        RateLimitKey::ClientIp | RateLimitKey::Route => None,
    }
}

/// Local mode: this process's buckets.
pub fn admit(rule: &RuleLimit, ctx: &mut RequestCtx<'_>) -> Flow {
    let now = Instant::now();
    let limit = &rule.limit;
    let decision = match &limit.limit.key {
        RateLimitKey::ClientIp => limit.buckets.check((rule.rule, ctx.client), now),
        RateLimitKey::Route => limit.buckets.check(rule.rule, now),
        key @ (RateLimitKey::Header(_) | RateLimitKey::JwtClaim(_)) => {
            let value = keyed_value(key, ctx);
            limit.buckets.check((rule.rule, value.as_deref()), now)
        }
    };
    answer(limit, decision, ctx)
}

/// Longest header or claim value put in a store key as it is; longer (or
/// unprintable) ones are hashed.
const MAX_PLAIN_VALUE: usize = 64;

/// Global mode: the store's bucket for this rule and key.
pub async fn admit_global(rule: &RuleLimit, ctx: &mut RequestCtx<'_>) -> Flow {
    let limit = &rule.limit;
    let (Some(global), Some(settings), Some(prefix)) =
        (&limit.global, &limit.limit.global, &rule.prefix)
    else {
        return admit(rule, ctx);
    };
    let mut key = prefix.to_string();
    match &limit.limit.key {
        RateLimitKey::ClientIp => key.push_str(&format!("ip:{}", ctx.client)),
        RateLimitKey::Route => key.push_str("route"),
        k => match keyed_value(k, ctx) {
            None => key.push_str("none"),
            Some(v) if v.len() <= MAX_PLAIN_VALUE && v.iter().all(u8::is_ascii_graphic) => {
                key.push_str("v:");
                key.push_str(&String::from_utf8_lossy(&v));
            }
            Some(v) => {
                let digest = ring::digest::digest(&ring::digest::SHA256, &v);
                key.push_str("d:");
                key.push_str(&hex(digest.as_ref()));
            }
        },
    }
    match global.check(key.as_bytes()).await {
        Ok(decision) => answer(limit, decision, ctx),
        Err(error) => {
            tracing::debug!(
                address = global.address(),
                ?error,
                "rate-limit store did not answer"
            );
            match settings.on_unavailable {
                StoreUnavailable::Allow => {
                    rule.errors.allowed.fetch_add(1, Ordering::Relaxed);
                    Flow::Next
                }
                StoreUnavailable::Deny => {
                    rule.errors.denied.fetch_add(1, Ordering::Relaxed);
                    Flow::Answer(plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "rate limit unavailable\n",
                    ))
                }
            }
        }
    }
}

/// The headers (and, when limited, the 429) for `decision`.
fn answer(limit: &CompiledRateLimit, decision: Decision, ctx: &mut RequestCtx<'_>) -> Flow {
    let state = |remaining: u64, reset: Duration| {
        HeaderValue::from_str(&format!(
            "{};r={remaining};t={}",
            limit.quoted_name,
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
