//! RateLimit: the CR's rate as a bucket size and refill period. A header
//! key without a valid header name cannot be enforced as written: the
//! resource is refused (its rules answer 500) rather than limiting on
//! something else.

use coxswain_api::RateLimit;
use coxswain_api::crds::{RateLimitKeyType, RateLimitUnit};
use coxswain_ir::{ExtensionSpec, RateLimitKey};

use super::{Resolved, enforced_or_refused};

pub fn resolve(cr: &RateLimit) -> Resolved {
    enforced_or_refused(parse(cr).map(ExtensionSpec::RateLimit))
}

/// An RFC 9110 token: what a header name may be.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn parse(cr: &RateLimit) -> Result<coxswain_ir::RateLimit, String> {
    let spec = &cr.spec;
    if spec.requests == 0 {
        return Err("spec.requests: must be at least 1".into());
    }
    let burst = spec.burst.unwrap_or(spec.requests);
    if burst == 0 {
        return Err("spec.burst: must be at least 1".into());
    }
    let key = match spec.key.as_ref().map(|k| (k.kind, k.name.as_deref())) {
        None | Some((RateLimitKeyType::ClientIP, _)) => RateLimitKey::ClientIp,
        Some((RateLimitKeyType::Route, _)) => RateLimitKey::Route,
        Some((RateLimitKeyType::Header, Some(name))) => {
            if !is_token(name) {
                return Err(format!("spec.key.name: {name:?} is not a header name"));
            }
            RateLimitKey::Header(name.to_ascii_lowercase())
        }
        Some((RateLimitKeyType::Header, None)) => {
            return Err("spec.key.name: a Header key needs the header's name".into());
        }
    };
    let period_ms = match spec.unit {
        RateLimitUnit::Second => 1_000,
        RateLimitUnit::Minute => 60_000,
        RateLimitUnit::Hour => 3_600_000,
    };
    Ok(coxswain_ir::RateLimit {
        name: cr.metadata.name.clone().unwrap_or_default(),
        requests: spec.requests,
        period_ms,
        burst,
        key,
    })
}
