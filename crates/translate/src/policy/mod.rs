//! Policies attached to backends, Gateways or listeners by `targetRefs`, one file per
//! policy kind; each finds what it targets, resolves conflicts and writes
//! `status.ancestors` for the Gateways it affects.

pub mod backend_policy;
pub mod backend_tls;
pub mod backend_traffic;
pub mod client_traffic;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coxswain_api::ApiResource;
use coxswain_api::ObjectKey;

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
