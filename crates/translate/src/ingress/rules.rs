//! One Ingress lowered onto IR HTTP rules: one rule per path, with the
//! rule's host (or none), and the `defaultBackend` as a catch-all rule.

use coxswain_api::k8s_openapi::api::networking::v1::IngressBackend;
use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::{
    BackendTarget, Hostname, PathMatch, Route, RouteId, RouteKind, RouteMatch, Timeouts,
    WeightedBackend,
};

use super::backend;
use super::paths::path_match;
use super::problem::IngressProblem;
use crate::route::ClusterSpec;

/// An Ingress's IR rules and the clusters they send to.
#[derive(Default)]
pub struct Lowered {
    /// In spec order (rule, then path).
    pub routes: Vec<Route>,
    /// `spec.defaultBackend`: `PathPrefix /` on every host.
    pub default_backend: Option<Route>,
    pub clusters: Vec<ClusterSpec>,
}

pub fn lower(
    snapshot: &Snapshot,
    key: &ObjectKey,
    ingress: &Ingress,
    problems: &mut Vec<IngressProblem>,
) -> Lowered {
    let mut out = Lowered::default();
    let Some(spec) = ingress.spec.as_ref() else {
        return out;
    };
    let mut index = 0u32;
    for (r, rule) in spec.rules.iter().flatten().enumerate() {
        let hostnames = match rule.host.as_deref() {
            None | Some("") => Vec::new(),
            Some(host) => match Hostname::parse(host) {
                Ok(h) => vec![h],
                Err(e) => {
                    problems.push(IngressProblem::InvalidHost {
                        at: format!("rules[{r}]"),
                        host: host.to_string(),
                        why: e.to_string(),
                    });
                    continue;
                }
            },
        };
        let paths = rule.http.as_ref().map(|h| h.paths.as_slice());
        for (p, path) in paths.unwrap_or_default().iter().enumerate() {
            let at = format!("rules[{r}].http.paths[{p}]");
            let rule_index = index;
            index += 1;
            let matched = match path_match(&path.path_type, path.path.as_deref()) {
                Ok(m) => m,
                Err(why) => {
                    problems.push(IngressProblem::InvalidPath { at, why });
                    continue;
                }
            };
            let Some(target) =
                resolve_target(snapshot, key, &path.backend, &at, &mut out, problems)
            else {
                continue;
            };
            out.routes
                .push(route(key, rule_index, hostnames.clone(), matched, target));
        }
    }
    if let Some(default) = &spec.default_backend
        && let Some(target) =
            resolve_target(snapshot, key, default, "defaultBackend", &mut out, problems)
    {
        let matched = PathMatch::Prefix("/".to_string());
        out.default_backend = Some(route(key, index, Vec::new(), matched, target));
    }
    out
}

/// Where a path's requests go; `None` when it is not served.
fn resolve_target(
    snapshot: &Snapshot,
    key: &ObjectKey,
    backend: &IngressBackend,
    at: &str,
    out: &mut Lowered,
    problems: &mut Vec<IngressProblem>,
) -> Option<BackendTarget> {
    match backend::resolve(snapshot, &key.namespace, backend, at) {
        Ok(Ok(spec)) => {
            let name = spec.name.clone();
            out.clusters.push(spec);
            Some(BackendTarget::Cluster(name))
        }
        Ok(Err(why)) => {
            problems.push(IngressProblem::Unresolved {
                at: at.to_string(),
                why: why.clone(),
            });
            Some(BackendTarget::Invalid { reason: why })
        }
        Err(problem) => {
            problems.push(problem);
            None
        }
    }
}

fn route(
    key: &ObjectKey,
    rule_index: u32,
    hostnames: Vec<Hostname>,
    path: PathMatch,
    target: BackendTarget,
) -> Route {
    Route {
        id: RouteId {
            kind: RouteKind::Ingress,
            namespace: key.namespace.to_string(),
            name: key.name.to_string(),
            rule_index,
            rule_name: None,
        },
        hostnames,
        matches: vec![RouteMatch {
            path,
            method: None,
            headers: Vec::new(),
            query: Vec::new(),
            grpc: None,
        }],
        filters: Vec::new(),
        backends: vec![WeightedBackend {
            weight: 1,
            target,
            filters: Vec::new(),
        }],
        timeouts: Timeouts::default(),
        retry: None,
        session: None,
    }
}
