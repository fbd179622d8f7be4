//! Policies attached to backends or Gateways by `targetRefs`, one file per
//! policy kind; each finds what it targets, resolves conflicts and writes
//! `status.ancestors` for the Gateways it affects.

pub mod backend_policy;
pub mod backend_tls;
pub mod backend_traffic;

use std::collections::BTreeMap;
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
