//! Ingress annotations onto Gateway API filters and Coxswain resources.

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use serde_json::Value;

use super::report::Report;

/// Annotation prefixes that ask for behaviour.
const PREFIXES: &[&str] = &["ingress.coxswain-labs.dev/", "nginx.ingress.kubernetes.io/"];

/// What an Ingress's annotations add to each of its routes' rules.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// Filters on every rule, in the order they run.
    pub filters: Vec<Value>,
    /// HTTPRoute rule `timeouts`.
    pub timeouts: Option<Value>,
    /// Resources the filters refer to (BasicAuth, RequestSizeLimit...).
    pub objects: Vec<Value>,
}

pub fn convert(
    _snapshot: &Snapshot,
    key: &ObjectKey,
    ingress: &Ingress,
    report: &mut Report,
) -> Extras {
    for name in ingress.metadata.annotations.iter().flat_map(|a| a.keys()) {
        if PREFIXES.iter().any(|p| name.starts_with(p)) {
            report.lost(
                key,
                name.as_str(),
                "not mapped: this annotation has no migration yet",
            );
        }
    }
    Extras::default()
}
