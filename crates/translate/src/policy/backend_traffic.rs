//! XBackendTrafficPolicy (experimental): a retry budget for the Services it
//! targets, and each policy's status per Gateway that routes to them.
//!
//! - `retryConstraint`: retries to a Service may make up at most
//!   `budget.percent` of its requests over `budget.interval`, but
//!   `minRetryRate.count` per `minRetryRate.interval` are always allowed;
//!   a retry past both gets 503 (the proxy enforces it per Service port).
//! - `sessionPersistence` is not implemented for this kind: the policy is
//!   still applied and its status says `PartiallyInvalid=True
//!   UnsupportedValue` (CoxswainBackendPolicy has sticky sessions).
//! - Conflicts: the oldest policy on a Service wins (then namespace/name);
//!   the others are `Accepted=False Conflicted`.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::gw::xbackendtrafficpolicies::{
    XBackendTrafficPolicyRetryConstraint, XBackendTrafficPolicyStatus,
    XBackendTrafficPolicyStatusAncestors, XBackendTrafficPolicyStatusAncestorsAncestorRef,
    XBackendTrafficPolicyTargetRefs,
};
use coxswain_api::{GATEWAY_GROUP, ObjectKey, Snapshot, XBackendTrafficPolicy};
use coxswain_ir::RetryBudget;

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::duration::parse_duration_ms;
use crate::policy::backend_tls::MAX_ANCESTORS;
use crate::policy::claims::{Claims, service_target};
use crate::route::ClusterSpec;

const DEFAULT_PERCENT: u8 = 20;
const DEFAULT_INTERVAL_MS: u64 = 10_000;
const DEFAULT_MIN_COUNT: u32 = 10;
const DEFAULT_MIN_INTERVAL_MS: u64 = 1_000;
const HOUR_MS: u64 = 3_600_000;

/// Every XBackendTrafficPolicy, parsed, and which one each Service gets.
pub struct BackendTrafficIndex<'a> {
    policies: BTreeMap<ObjectKey, (&'a XBackendTrafficPolicy, Parsed)>,
    /// Which policy each Service gets.
    claims: Claims,
}

#[derive(Clone, Debug)]
struct Parsed {
    /// `Err`: why the policy cannot be applied (`Accepted=False Invalid`).
    budget: Result<Option<RetryBudget>, String>,
    unsupported: Vec<&'static str>,
}

impl<'a> BackendTrafficIndex<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let claims = Claims::new(&snapshot.backend_traffic_policies, |key, policy| {
            policy
                .spec
                .target_refs
                .iter()
                .filter(|t| is_service(t))
                .map(|t| service_target(&key.namespace, &t.name))
                .collect()
        });
        let policies = snapshot
            .backend_traffic_policies
            .iter()
            .map(|(key, policy)| (key.clone(), (policy.as_ref(), parse(key, policy))))
            .collect();
        BackendTrafficIndex { policies, claims }
    }

    /// The retry budget for a cluster (a Service port), if a valid policy
    /// targets its Service.
    pub fn cluster_budget(&self, spec: &ClusterSpec) -> Option<RetryBudget> {
        let key = self
            .claims
            .holder(&service_target(&spec.namespace, &spec.service))?;
        let (_, parsed) = self.policies.get(key)?;
        parsed.budget.clone().ok().flatten()
    }

    /// Each policy's status: one ancestor per Gateway of ours that routes
    /// to a Service it targets (`gateways_by_service`).
    pub fn statuses(
        &self,
        gateways_by_service: &BTreeMap<(String, String), BTreeSet<ObjectKey>>,
        options: &Options,
    ) -> BTreeMap<ObjectKey, XBackendTrafficPolicyStatus> {
        let mut out = BTreeMap::new();
        for (key, (policy, parsed)) in &self.policies {
            let names = policy.spec.target_refs.iter().map(|t| t.name.as_str());
            let gateways = super::ancestor_gateways(&key.namespace, names, gateways_by_service);
            if gateways.is_empty() {
                continue;
            }
            let stamp = Stamp {
                generation: policy.metadata.generation,
                now: &options.now,
            };
            let conditions = self.conditions(key, policy, parsed);
            let ancestors = gateways
                .into_iter()
                .map(|gw| XBackendTrafficPolicyStatusAncestors {
                    ancestor_ref: XBackendTrafficPolicyStatusAncestorsAncestorRef {
                        group: Some(GATEWAY_GROUP.to_string()),
                        kind: Some("Gateway".to_string()),
                        name: gw.name.to_string(),
                        namespace: Some(gw.namespace.to_string()),
                        port: None,
                        section_name: None,
                    },
                    conditions: stamp.all(conditions.clone()),
                    controller_name: options.controller_name.to_string(),
                })
                .take(MAX_ANCESTORS)
                .collect();
            out.insert(key.clone(), XBackendTrafficPolicyStatus { ancestors });
        }
        out
    }

    fn conditions(
        &self,
        key: &ObjectKey,
        policy: &XBackendTrafficPolicy,
        parsed: &Parsed,
    ) -> Vec<Cond> {
        let rejected = |reason, message: String| {
            vec![Cond::new(ConditionType::Accepted, false, reason, message)]
        };
        if let Some(t) = policy.spec.target_refs.iter().find(|t| !is_service(t)) {
            return rejected(
                Reason::Invalid,
                format!(
                    "targetRef {}/{} {:?}: only core Services can be targets",
                    t.group, t.kind, t.name
                ),
            );
        }
        let lost = policy.spec.target_refs.iter().find_map(|t| {
            let winner = self
                .claims
                .lost_to(key, &service_target(&key.namespace, &t.name))?;
            Some((winner, &t.name))
        });
        if let Some((winner, service)) = lost {
            return rejected(
                Reason::Conflicted,
                format!(
                    "XBackendTrafficPolicy {winner} targets Service {service} too and is older"
                ),
            );
        }
        if let Err(message) = &parsed.budget {
            return rejected(Reason::Invalid, message.clone());
        }
        let mut conds = vec![Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            "policy is accepted",
        )];
        if !parsed.unsupported.is_empty() {
            conds.push(Cond::new(
                ConditionType::PartiallyInvalid,
                true,
                Reason::UnsupportedValue,
                format!("not supported, ignored: {}", parsed.unsupported.join("; ")),
            ));
        }
        conds
    }
}

fn is_service(t: &XBackendTrafficPolicyTargetRefs) -> bool {
    t.group.is_empty() && t.kind == "Service"
}

fn parse(key: &ObjectKey, policy: &XBackendTrafficPolicy) -> Parsed {
    let mut unsupported = Vec::new();
    if policy.spec.session_persistence.is_some() {
        unsupported.push("sessionPersistence (sticky sessions come from CoxswainBackendPolicy)");
    }
    let budget = match &policy.spec.retry_constraint {
        None => Ok(None),
        Some(c) => budget(key, c).map(Some),
    };
    Parsed {
        budget,
        unsupported,
    }
}

/// A duration within `min..=max` milliseconds, or why not.
fn bounded(field: &str, text: Option<&str>, default: u64, min: u64) -> Result<u64, String> {
    let Some(text) = text else {
        return Ok(default);
    };
    let ms = parse_duration_ms(text).map_err(|e| format!("{field}: {e}"))?;
    if ms < min || ms > HOUR_MS {
        return Err(format!("{field} {text:?} must be from {min}ms to 1h"));
    }
    Ok(ms)
}

/// The CRD's defaults apply to what is unset (a file is not defaulted by
/// an API server); values it would reject make the policy Invalid.
fn budget(
    key: &ObjectKey,
    c: &XBackendTrafficPolicyRetryConstraint,
) -> Result<RetryBudget, String> {
    let b = c.budget.as_ref();
    let percent = match b.and_then(|b| b.percent) {
        None => DEFAULT_PERCENT,
        Some(p) => u8::try_from(p)
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| format!("retryConstraint.budget.percent {p} is not from 0 to 100"))?,
    };
    let interval_ms = bounded(
        "retryConstraint.budget.interval",
        b.and_then(|b| b.interval.as_deref()),
        DEFAULT_INTERVAL_MS,
        1_000,
    )?;
    let m = c.min_retry_rate.as_ref();
    let min_count = match m.and_then(|m| m.count) {
        None => DEFAULT_MIN_COUNT,
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| {
                format!("retryConstraint.minRetryRate.count {n} is not from 1 to 1000000")
            })?,
    };
    let min_interval_ms = bounded(
        "retryConstraint.minRetryRate.interval",
        m.and_then(|m| m.interval.as_deref()),
        DEFAULT_MIN_INTERVAL_MS,
        1,
    )?;
    Ok(RetryBudget {
        policy: key.to_string(),
        percent,
        interval_ms,
        min_count,
        min_interval_ms,
    })
}
