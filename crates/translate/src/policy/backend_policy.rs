//! CoxswainBackendPolicy: connection behaviour towards the pods of a
//! Service — timeouts, load balancing, a circuit breaker, sticky sessions.
//!
//! - It attaches to whole Services in its own namespace (every port).
//! - Conflicts: the oldest policy on a Service wins (then by name); the
//!   others get `Accepted=False Conflicted` for that Service.
//! - Invalid values fail open, as the user guide promises: the field keeps
//!   its default and the policy's status says so (`PartiallyInvalid=True
//!   UnsupportedValue` naming every ignored field), so nothing configured is
//!   ignored without a word.
//! - Status: one ancestor entry per targeted Service.

use std::collections::BTreeMap;

use coxswain_api::{
    CoxswainBackendPolicy, ObjectKey, Snapshot,
    crds::{BackendTimeouts, CircuitBreaker, CoxswainBackendPolicyStatus, SessionPersistence},
};
use coxswain_ir::{BackendPolicy, Balancer, Breaker, HashKey, Persistence};

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::duration::parse_duration_ms;
use crate::policy::claims::{Claims, service_target};
use crate::route::ClusterSpec;

/// The cookie Cookie-mode persistence sets when the policy names none.
pub const DEFAULT_SESSION_COOKIE: &str = "__coxswain_session";

const DEFAULT_WINDOW_MS: u64 = 10_000;
const DEFAULT_OPEN_MS: u64 = 5_000;
const DEFAULT_MIN_REQUESTS: u32 = 10;

/// Every CoxswainBackendPolicy, parsed, and which one each Service gets.
pub struct BackendPolicyIndex<'a> {
    snapshot: &'a Snapshot,
    policies: BTreeMap<ObjectKey, (&'a CoxswainBackendPolicy, Parsed)>,
    /// Which policy each Service gets.
    claims: Claims,
}

/// One policy's settings and the fields it had to ignore.
#[derive(Clone, Debug)]
struct Parsed {
    policy: BackendPolicy,
    ignored: Vec<String>,
}

impl<'a> BackendPolicyIndex<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let claims = Claims::new(&snapshot.backend_policies, |key, policy| {
            policy
                .spec
                .target_refs
                .iter()
                .filter(|t| is_service(t))
                .map(|t| service_target(&key.namespace, &t.name))
                .collect()
        });
        let policies = snapshot
            .backend_policies
            .iter()
            .map(|(key, policy)| (key.clone(), (policy.as_ref(), parse(key, policy))))
            .collect();
        BackendPolicyIndex {
            snapshot,
            policies,
            claims,
        }
    }

    /// The settings for a cluster (a Service port), if a policy targets its
    /// Service.
    pub fn cluster_policy(&self, spec: &ClusterSpec) -> Option<BackendPolicy> {
        let key = self
            .claims
            .holder(&service_target(&spec.namespace, &spec.service))?;
        self.policies.get(key).map(|(_, p)| p.policy.clone())
    }

    /// Every policy's status: one ancestor entry per targeted Service.
    /// `clusters` are the Service ports routes use (for what a field cannot
    /// do on one of them).
    pub fn statuses(
        &self,
        clusters: &BTreeMap<String, ClusterSpec>,
        options: &Options,
    ) -> BTreeMap<ObjectKey, CoxswainBackendPolicyStatus> {
        self.policies
            .iter()
            .map(|(key, (policy, parsed))| {
                let stamp = Stamp {
                    generation: policy.metadata.generation,
                    now: &options.now,
                };
                let ancestors = super::coxswain_ancestors(
                    &policy.spec.target_refs,
                    |t| (t.group.as_str(), t.kind.as_str(), t.name.as_str()),
                    &key.namespace,
                    (&stamp, &options.controller_name),
                    |target| self.conditions(key, target, parsed, clusters),
                );
                (key.clone(), CoxswainBackendPolicyStatus { ancestors })
            })
            .collect()
    }

    fn conditions(
        &self,
        key: &ObjectKey,
        target: &coxswain_api::crds::BackendPolicyTargetRef,
        parsed: &Parsed,
        clusters: &BTreeMap<String, ClusterSpec>,
    ) -> Vec<Cond> {
        let rejected = |reason, message: String| {
            vec![Cond::new(ConditionType::Accepted, false, reason, message)]
        };
        if !is_service(target) {
            return rejected(
                Reason::Invalid,
                format!(
                    "targetRef {}/{} {:?}: only core Services can be targets",
                    target.group, target.kind, target.name
                ),
            );
        }
        let service = ObjectKey::new(&key.namespace, &target.name);
        if !self.snapshot.services.contains_key(&service) {
            return rejected(
                Reason::TargetNotFound,
                format!("Service {service} does not exist"),
            );
        }
        if let Some(winner) = self
            .claims
            .lost_to(key, &service_target(&key.namespace, &target.name))
        {
            return rejected(
                Reason::Conflicted,
                format!(
                    "CoxswainBackendPolicy {winner} targets Service {service} too and is older"
                ),
            );
        }
        let mut conds = vec![Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            format!("applied to every route's traffic to Service {service}"),
        )];
        let mut ignored = parsed.ignored.clone();
        let h2c = clusters.values().any(|c| {
            *c.namespace == *key.namespace
                && c.service == target.name
                && c.protocol == coxswain_ir::UpstreamProtocol::H2c
        });
        if h2c && parsed.policy.idle_timeout_ms.is_some() {
            // One multiplexed HTTP/2 connection per pod is kept open.
            ignored.push(
                "timeouts.idle applies to HTTP/1.1 connection pools, not to this Service's HTTP/2 (h2c) port"
                    .to_string(),
            );
        }
        if !ignored.is_empty() {
            conds.push(Cond::new(
                ConditionType::PartiallyInvalid,
                true,
                Reason::UnsupportedValue,
                format!("ignored, defaults kept: {}", ignored.join("; ")),
            ));
        }
        conds
    }
}

fn is_service(t: &coxswain_api::crds::BackendPolicyTargetRef) -> bool {
    t.group.is_empty() && t.kind == "Service"
}

fn parse(key: &ObjectKey, policy: &CoxswainBackendPolicy) -> Parsed {
    let spec = &policy.spec;
    let mut ignored = Vec::new();
    let (connect_timeout_ms, idle_timeout_ms) = timeouts(spec.timeouts.as_ref(), &mut ignored);
    let balancer = spec
        .load_balancer
        .as_ref()
        .and_then(|lb| lb.algorithm.as_deref())
        .map_or(Balancer::RoundRobin, |a| {
            balancer(a).unwrap_or_else(|| {
                ignored.push(format!(
                    "loadBalancer.algorithm {a:?} is not one of round_robin, least_conn, ewma, ip_hash, hash:uri, hash:source-ip, hash:header=<name>, hash:cookie=<name> (round_robin used)"
                ));
                Balancer::RoundRobin
            })
        });
    let breaker = spec
        .circuit_breaker
        .as_ref()
        .and_then(|b| breaker(b, &mut ignored));
    let persistence = spec
        .session_persistence
        .as_ref()
        .and_then(|p| persistence(p, &mut ignored));
    Parsed {
        policy: BackendPolicy {
            policy: key.to_string(),
            connect_timeout_ms,
            idle_timeout_ms,
            balancer,
            breaker,
            persistence,
        },
        ignored,
    }
}

/// A duration field: `None` when unset or invalid (noted in `ignored`).
fn duration(field: &str, value: Option<&str>, ignored: &mut Vec<String>) -> Option<u64> {
    let text = value?;
    match parse_duration_ms(text) {
        Ok(0) => {
            ignored.push(format!("{field} must be longer than 0"));
            None
        }
        Ok(ms) => Some(ms),
        Err(e) => {
            ignored.push(format!("{field}: {e}"));
            None
        }
    }
}

fn timeouts(t: Option<&BackendTimeouts>, ignored: &mut Vec<String>) -> (Option<u64>, Option<u64>) {
    let Some(t) = t else {
        return (None, None);
    };
    (
        duration("timeouts.connect", t.connect.as_deref(), ignored),
        duration("timeouts.idle", t.idle.as_deref(), ignored),
    )
}

/// The balancer an `algorithm` value names.
pub(crate) fn balancer(algorithm: &str) -> Option<Balancer> {
    Some(match algorithm {
        "round_robin" => Balancer::RoundRobin,
        "least_conn" => Balancer::LeastConn,
        "ewma" => Balancer::Ewma,
        "ip_hash" | "hash:source-ip" => Balancer::Hash(HashKey::SourceIp),
        "hash:uri" => Balancer::Hash(HashKey::Uri),
        other => {
            if let Some(name) = other.strip_prefix("hash:header=") {
                let name = name.to_ascii_lowercase();
                http_token(&name).then_some(Balancer::Hash(HashKey::Header(name)))?
            } else if let Some(name) = other.strip_prefix("hash:cookie=") {
                http_token(name).then(|| Balancer::Hash(HashKey::Cookie(name.to_string())))?
            } else {
                return None;
            }
        }
    })
}

/// An RFC 9110 token: what header and cookie names are made of.
fn http_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn breaker(b: &CircuitBreaker, ignored: &mut Vec<String>) -> Option<Breaker> {
    let threshold = match b.threshold {
        None => {
            let others = b.window.is_some()
                || b.open_duration.is_some()
                || b.min_requests.is_some()
                || b.max_open_duration.is_some();
            if others {
                ignored.push(
                    "circuitBreaker without threshold: the breaker is off, its other fields do nothing"
                        .to_string(),
                );
            }
            return None;
        }
        Some(t @ 1..=100) => u8::try_from(t).ok()?,
        Some(t) => {
            ignored.push(format!(
                "circuitBreaker.threshold {t} is not a percentage from 1 to 100 (breaker off)"
            ));
            return None;
        }
    };
    let window_ms = duration("circuitBreaker.window", b.window.as_deref(), ignored)
        .unwrap_or(DEFAULT_WINDOW_MS);
    let open_ms = duration(
        "circuitBreaker.openDuration",
        b.open_duration.as_deref(),
        ignored,
    )
    .unwrap_or(DEFAULT_OPEN_MS);
    let max_open_ms = duration(
        "circuitBreaker.maxOpenDuration",
        b.max_open_duration.as_deref(),
        ignored,
    );
    let min_requests = match b.min_requests {
        None => DEFAULT_MIN_REQUESTS,
        Some(n) => u32::try_from(n).unwrap_or_else(|_| {
            ignored.push(format!(
                "circuitBreaker.minRequests {n} is not a count (default {DEFAULT_MIN_REQUESTS} used)"
            ));
            DEFAULT_MIN_REQUESTS
        }),
    };
    Some(Breaker {
        threshold_percent: threshold,
        window_ms,
        open_ms,
        min_requests,
        max_open_ms,
    })
}

fn persistence(p: &SessionPersistence, ignored: &mut Vec<String>) -> Option<Persistence> {
    let name = p.session_name.as_deref().filter(|n| !n.is_empty());
    match p.type_.as_deref().unwrap_or("Cookie") {
        "Cookie" => {
            let name = match name {
                Some(n) if http_token(n) => n.to_string(),
                Some(n) => {
                    ignored.push(format!(
                        "sessionPersistence.sessionName {n:?} is not a valid cookie name ({DEFAULT_SESSION_COOKIE} used)"
                    ));
                    DEFAULT_SESSION_COOKIE.to_string()
                }
                None => DEFAULT_SESSION_COOKIE.to_string(),
            };
            Some(Persistence::Cookie { name })
        }
        "Header" => match name {
            Some(n) if http_token(n) => Some(Persistence::Header {
                name: n.to_ascii_lowercase(),
            }),
            Some(n) => {
                ignored.push(format!(
                    "sessionPersistence.sessionName {n:?} is not a valid header name (no persistence)"
                ));
                None
            }
            None => {
                ignored.push(
                    "sessionPersistence type Header needs sessionName, the header to key on (no persistence)"
                        .to_string(),
                );
                None
            }
        },
        other => {
            ignored.push(format!(
                "sessionPersistence.type {other:?} is not Cookie or Header (no persistence)"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_algorithm_parses() {
        let cases = [
            ("round_robin", Balancer::RoundRobin),
            ("least_conn", Balancer::LeastConn),
            ("ewma", Balancer::Ewma),
            ("ip_hash", Balancer::Hash(HashKey::SourceIp)),
            ("hash:source-ip", Balancer::Hash(HashKey::SourceIp)),
            ("hash:uri", Balancer::Hash(HashKey::Uri)),
            (
                "hash:header=X-User-Id",
                Balancer::Hash(HashKey::Header("x-user-id".into())),
            ),
            (
                "hash:cookie=session",
                Balancer::Hash(HashKey::Cookie("session".into())),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(balancer(text), Some(want), "{text}");
        }
        for bad in ["fastest", "hash:header=", "hash:cookie=a b", "hash:", ""] {
            assert_eq!(balancer(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn breaker_defaults_and_fail_open() {
        let mut ignored = Vec::new();
        let b = breaker(
            &CircuitBreaker {
                threshold: Some(50),
                ..CircuitBreaker::default()
            },
            &mut ignored,
        );
        assert_eq!(
            b,
            Some(Breaker {
                threshold_percent: 50,
                window_ms: 10_000,
                open_ms: 5_000,
                min_requests: 10,
                max_open_ms: None,
            })
        );
        assert!(ignored.is_empty());
        let off = breaker(
            &CircuitBreaker {
                threshold: Some(101),
                window: Some("10s".into()),
                ..CircuitBreaker::default()
            },
            &mut ignored,
        );
        assert_eq!(off, None);
        let b = breaker(
            &CircuitBreaker {
                threshold: Some(1),
                window: Some("ten seconds".into()),
                min_requests: Some(-3),
                ..CircuitBreaker::default()
            },
            &mut ignored,
        );
        assert_eq!(b.map(|b| (b.window_ms, b.min_requests)), Some((10_000, 10)));
        assert_eq!(ignored.len(), 3, "{ignored:?}");
    }

    #[test]
    fn persistence_modes() {
        let mut ignored = Vec::new();
        let sp = |t: Option<&str>, n: Option<&str>| SessionPersistence {
            type_: t.map(str::to_string),
            session_name: n.map(str::to_string),
        };
        assert_eq!(
            persistence(&sp(None, None), &mut ignored),
            Some(Persistence::Cookie {
                name: DEFAULT_SESSION_COOKIE.into()
            })
        );
        assert_eq!(
            persistence(&sp(Some("Header"), Some("X-Tenant")), &mut ignored),
            Some(Persistence::Header {
                name: "x-tenant".into()
            })
        );
        assert!(ignored.is_empty());
        assert_eq!(persistence(&sp(Some("Header"), None), &mut ignored), None);
        assert_eq!(
            persistence(&sp(Some("Cookie"), Some("bad name;")), &mut ignored),
            Some(Persistence::Cookie {
                name: DEFAULT_SESSION_COOKIE.into()
            })
        );
        assert_eq!(persistence(&sp(Some("Ip"), None), &mut ignored), None);
        assert_eq!(ignored.len(), 3, "{ignored:?}");
    }
}
