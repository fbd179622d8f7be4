//! RateLimit: the CR's rate as a bucket size and refill period. A header
//! key without a valid header name, a JwtClaim key without a claim, or a
//! global store whose address is not `host:port` cannot be enforced as
//! written: the resource is refused (its rules answer 500) rather than
//! limiting on something else. A JwtClaim key used by a rule without a
//! JwtAuth filter is served (those requests share one bucket) and said so
//! in the RateLimit's Accepted message.

use coxswain_api::crds::{RateLimitKeyType, RateLimitUnit, StoreUnavailablePolicy};
use coxswain_api::{ObjectKey, RateLimit, Snapshot};
use coxswain_ir::{ExtensionSpec, GlobalRateLimit, RateLimitKey, StoreUnavailable};

use super::{GROUP, Resolved, accepted_with, enforced_or_refused};

pub fn resolve(snapshot: &Snapshot, key: &ObjectKey, cr: &RateLimit) -> Resolved {
    let parsed = parse(key, cr);
    let unauthenticated = match &parsed {
        Ok(limit) if matches!(limit.key, RateLimitKey::JwtClaim(_)) => {
            rules_without_jwt_auth(snapshot, key)
        }
        _ => Vec::new(),
    };
    let mut resolved = enforced_or_refused(parsed.map(ExtensionSpec::RateLimit));
    if !unauthenticated.is_empty() {
        resolved.conditions = accepted_with(&format!(
            "enforced; rules without a JwtAuth filter ({}) have no claims: \
             their requests share one bucket",
            unauthenticated.join(", ")
        ));
    }
    resolved
}

/// An RFC 9110 token: what a header name may be.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `host:port`, the host a name or an address (IPv6 in brackets), the port
/// 1-65535.
fn is_address(address: &str) -> bool {
    let Some((host, port)) = address.rsplit_once(':') else {
        return false;
    };
    let port_ok = port.parse::<u16>().is_ok_and(|p| p != 0);
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        }
    };
    port_ok && host_ok
}

fn parse(object: &ObjectKey, cr: &RateLimit) -> Result<coxswain_ir::RateLimit, String> {
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
        Some((RateLimitKeyType::JwtClaim, Some(name))) if !name.is_empty() => {
            RateLimitKey::JwtClaim(name.to_string())
        }
        Some((RateLimitKeyType::JwtClaim, _)) => {
            return Err("spec.key.name: a JwtClaim key needs the claim's name".into());
        }
    };
    let period_ms = match spec.unit {
        RateLimitUnit::Second => 1_000,
        RateLimitUnit::Minute => 60_000,
        RateLimitUnit::Hour => 3_600_000,
    };
    let global = match &spec.global {
        None => None,
        Some(g) => {
            let address = g.redis.address.trim();
            if !is_address(address) {
                return Err(format!(
                    "spec.global.redis.address: {address:?} is not host:port"
                ));
            }
            Some(GlobalRateLimit {
                address: address.to_string(),
                scope: object.to_string(),
                on_unavailable: match g.on_store_unavailable.unwrap_or_default() {
                    StoreUnavailablePolicy::Allow => StoreUnavailable::Allow,
                    StoreUnavailablePolicy::Deny => StoreUnavailable::Deny,
                },
            })
        }
    };
    Ok(coxswain_ir::RateLimit {
        name: cr.metadata.name.clone().unwrap_or_default(),
        requests: spec.requests,
        period_ms,
        burst,
        key,
        global,
    })
}

/// `route/rule-index` of every HTTPRoute and GRPCRoute rule in `limit`'s
/// namespace that uses it without also using a JwtAuth.
fn rules_without_jwt_auth(snapshot: &Snapshot, limit: &ObjectKey) -> Vec<String> {
    let refs = |filters: Vec<(&str, &str)>| {
        let uses = |kind: &str| {
            filters
                .iter()
                .any(|(k, n)| *k == kind && (kind != "RateLimit" || *n == &*limit.name))
        };
        uses("RateLimit") && !uses("JwtAuth")
    };
    let mut out = Vec::new();
    for (key, route) in &snapshot.http_routes {
        if key.namespace != limit.namespace {
            continue;
        }
        for (i, rule) in route.spec.rules.iter().flatten().enumerate() {
            let filters = rule
                .filters
                .iter()
                .flatten()
                .filter_map(|f| f.extension_ref.as_ref())
                .filter(|r| r.group == GROUP)
                .map(|r| (r.kind.as_str(), r.name.as_str()))
                .collect();
            if refs(filters) {
                out.push(format!("HTTPRoute {}/{i}", key.name));
            }
        }
    }
    for (key, route) in &snapshot.grpc_routes {
        if key.namespace != limit.namespace {
            continue;
        }
        for (i, rule) in route.spec.rules.iter().flatten().enumerate() {
            let filters = rule
                .filters
                .iter()
                .flatten()
                .filter_map(|f| f.extension_ref.as_ref())
                .filter(|r| r.group == GROUP)
                .map(|r| (r.kind.as_str(), r.name.as_str()))
                .collect();
            if refs(filters) {
                out.push(format!("GRPCRoute {}/{i}", key.name));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::is_address;

    #[test]
    fn addresses_are_host_and_port() {
        for ok in [
            "redis:6379",
            "10.0.0.1:6379",
            "[::1]:6379",
            "r.ns.svc.cluster.local:1",
        ] {
            assert!(is_address(ok), "{ok}");
        }
        for bad in [
            "redis",
            ":6379",
            "redis:0",
            "redis:65536",
            "::1:6379",
            "a b:1",
            "[x]:1",
        ] {
            assert!(!is_address(bad), "{bad}");
        }
    }
}
