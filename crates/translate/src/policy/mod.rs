//! Policies attached to backends, Gateways or listeners by `targetRefs`, one file per
//! policy kind; each finds what it targets, resolves conflicts through the
//! shared index ([`claims`]) and writes `status.ancestors` for what it
//! affects.

pub mod backend_policy;
pub mod backend_tls;
pub mod backend_traffic;
pub mod claims;
mod client_access_log;
pub mod client_traffic;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coxswain_api::ApiResource;
use coxswain_api::ObjectKey;
use coxswain_api::crds::{PolicyAncestorRef, PolicyAncestorStatus};

use crate::conditions::{Cond, Stamp};
use crate::policy::backend_tls::MAX_ANCESTORS;

/// Policies oldest first (creationTimestamp, then namespace/name): the
/// order in which they claim their targets, so the oldest wins a conflict.
pub fn oldest_first<T: ApiResource>(
    policies: &BTreeMap<ObjectKey, Arc<T>>,
) -> Vec<(&ObjectKey, &T)> {
    let mut by_age: Vec<(&ObjectKey, &T)> = policies.iter().map(|(k, p)| (k, p.as_ref())).collect();
    by_age.sort_by(|a, b| {
        (a.1.meta().creation_timestamp.as_ref(), a.0)
            .cmp(&(b.1.meta().creation_timestamp.as_ref(), b.0))
    });
    by_age
}

/// The Gateways of ours routing to a Service a policy's targets name (by
/// name: a target of another kind has no ancestor of its own, so the
/// Gateways routing to a Service of that name carry its error, where a
/// Service was probably meant).
pub fn ancestor_gateways<'g>(
    namespace: &str,
    target_names: impl Iterator<Item = &'g str>,
    gateways_by_service: &'g BTreeMap<(String, String), BTreeSet<ObjectKey>>,
) -> BTreeSet<&'g ObjectKey> {
    target_names
        .flat_map(|name| gateways_by_service.get(&(namespace.to_string(), name.to_string())))
        .flatten()
        .collect()
}

/// A Coxswain policy's `status.ancestors`: one entry per distinct target
/// (`id` gives its group, kind and name, in the policy's `namespace`), at
/// most [`MAX_ANCESTORS`], each with the conditions `conditions` finds.
pub fn coxswain_ancestors<'t, T: 't>(
    targets: impl IntoIterator<Item = &'t T>,
    id: impl Fn(&T) -> (&str, &str, &str),
    namespace: &str,
    (stamp, controller_name): (&Stamp<'_>, &str),
    conditions: impl Fn(&T) -> Vec<Cond>,
) -> Vec<PolicyAncestorStatus> {
    let mut seen = BTreeSet::new();
    targets
        .into_iter()
        .filter(|t| seen.insert(id(t)))
        .take(MAX_ANCESTORS)
        .map(|target| {
            let (group, kind, name) = id(target);
            PolicyAncestorStatus {
                ancestor_ref: PolicyAncestorRef {
                    group: group.to_string(),
                    kind: kind.to_string(),
                    name: name.to_string(),
                    namespace: Some(namespace.to_string()),
                },
                controller_name: controller_name.to_string(),
                conditions: stamp.all(conditions(target)),
            }
        })
        .collect()
}
