//! A route rule compiled for serving: its matches, filters with pre-parsed
//! header names and values, weighted backends and metric handles.

use std::sync::Arc;

use coxswain_ir::{
    BackendTarget, Filter, HeaderModifier, MatchSpecificity, Redirect, Rewrite, Route, RouteId,
    Timeouts,
};
use http::{HeaderName, HeaderValue};

use crate::cluster::{ClusterSet, ClusterState};
use crate::http::cors::CorsPolicy;
use crate::http::session::SessionPolicy;
use crate::metrics::{Metrics, RouteMetrics, StatusCounters};
use crate::mirror::MirrorFilter;
use crate::retry::RetryPolicy;
use crate::router::{CompiledMatch, MatchError};
use crate::weighted::Weighted;

/// Header edits with names and values already validated.
#[derive(Debug, Default)]
pub struct HeaderEdits {
    pub set: Vec<(HeaderName, HeaderValue)>,
    pub add: Vec<(HeaderName, HeaderValue)>,
    pub remove: Vec<HeaderName>,
}

impl HeaderEdits {
    pub fn compile(m: &HeaderModifier) -> Self {
        let pair = |h: &coxswain_ir::Header| {
            let parsed = HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes())
                .ok()
                .zip(HeaderValue::from_str(&h.value).ok());
            if parsed.is_none() {
                tracing::warn!(name = %h.name, "invalid header edit skipped");
            }
            parsed
        };
        HeaderEdits {
            set: m.set.iter().filter_map(pair).collect(),
            add: m.add.iter().filter_map(pair).collect(),
            remove: m
                .remove
                .iter()
                .filter_map(|n| HeaderName::from_bytes(n.to_ascii_lowercase().as_bytes()).ok())
                .collect(),
        }
    }

    pub fn apply(&self, headers: &mut http::HeaderMap) {
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
        for name in &self.remove {
            headers.remove(name);
        }
    }
}

#[derive(Debug)]
pub enum RouteFilter {
    RequestHeaders(HeaderEdits),
    ResponseHeaders(HeaderEdits),
    Redirect(Redirect),
    Rewrite(Rewrite),
    Mirror(MirrorFilter),
    Cors(CorsPolicy),
}

/// Compiles the filters of the route labelled `label`.
fn compile_filters(
    filters: &[Filter],
    clusters: &ClusterSet,
    metrics: &Metrics,
    label: &str,
) -> Vec<RouteFilter> {
    filters
        .iter()
        .map(|f| match f {
            Filter::RequestHeaders(m) => RouteFilter::RequestHeaders(HeaderEdits::compile(m)),
            Filter::ResponseHeaders(m) => RouteFilter::ResponseHeaders(HeaderEdits::compile(m)),
            Filter::Redirect(r) => RouteFilter::Redirect(r.clone()),
            Filter::Rewrite(r) => RouteFilter::Rewrite(r.clone()),
            Filter::Cors(c) => RouteFilter::Cors(CorsPolicy::compile(c)),
            Filter::Mirror(m) => {
                RouteFilter::Mirror(MirrorFilter::compile(m, clusters, &metrics.mirrors, label))
            }
        })
        .collect()
}

#[derive(Debug)]
pub enum Target {
    Cluster(Arc<ClusterState>),
    /// Unresolved backendRef, or a cluster missing from the config.
    Invalid(String),
}

impl Target {
    /// The cluster a backendRef names in `clusters`, or why there is none.
    pub fn resolve(target: &BackendTarget, clusters: &ClusterSet) -> Target {
        match target {
            BackendTarget::Cluster(name) => match clusters.get(name) {
                Some(c) => Target::Cluster(c.clone()),
                None => Target::Invalid(format!("cluster {name} missing")),
            },
            BackendTarget::Invalid { reason } => Target::Invalid(reason.clone()),
        }
    }
}

#[derive(Debug)]
pub struct Backend {
    pub target: Target,
    pub filters: Vec<RouteFilter>,
    pub counters: Arc<StatusCounters>,
}

#[derive(Debug)]
pub struct CompiledRoute {
    pub id: RouteId,
    pub label: String,
    pub matches: Vec<CompiledMatch>,
    /// Precedence of each match, kept so a reused route is not re-ranked.
    pub specificity: Vec<MatchSpecificity>,
    pub filters: Vec<RouteFilter>,
    backends: Weighted<Backend>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// The rule's session persistence.
    pub session: Option<SessionPolicy>,
    pub metrics: Arc<RouteMetrics>,
    /// Counters for responses with no upstream (redirects, 500s).
    pub local_counters: Arc<StatusCounters>,
}

/// `ns/name/rule` where rule is the rule name or index.
pub fn route_label(id: &RouteId) -> String {
    match &id.rule_name {
        Some(rule) => format!("{}/{}/{rule}", id.namespace, id.name),
        None => format!("{}/{}/{}", id.namespace, id.name, id.rule_index),
    }
}

impl CompiledRoute {
    pub fn compile(
        route: &Route,
        clusters: &ClusterSet,
        metrics: &Metrics,
    ) -> Result<Self, MatchError> {
        let matches = route
            .matches
            .iter()
            .map(CompiledMatch::compile)
            .collect::<Result<Vec<_>, _>>()?;
        let label = route_label(&route.id);
        let route_metrics = metrics.route(&label);
        let backends = Weighted::new(route.backends.iter().map(|b| {
            let upstream = match &b.target {
                BackendTarget::Cluster(name) => name.as_str(),
                BackendTarget::Invalid { .. } => "",
            };
            let backend = Backend {
                counters: route_metrics.upstream(upstream),
                target: Target::resolve(&b.target, clusters),
                filters: compile_filters(&b.filters, clusters, metrics, &label),
            };
            (b.weight, backend)
        }));
        Ok(CompiledRoute {
            id: route.id.clone(),
            matches,
            specificity: route.matches.iter().map(MatchSpecificity::of).collect(),
            filters: compile_filters(&route.filters, clusters, metrics, &label),
            backends,
            timeouts: route.timeouts.clone(),
            retry: RetryPolicy::compile(route.retry.as_ref()),
            session: route.session.as_ref().and_then(SessionPolicy::compile),
            local_counters: route_metrics.upstream(""),
            metrics: route_metrics,
            label,
        })
    }

    /// Weighted random choice; `None` when no backend has weight.
    pub fn choose_backend(&self) -> Option<&Backend> {
        self.backends.choose()
    }

    /// The backend (with weight) whose cluster has the endpoint of this
    /// address hash: where a session pinned there goes.
    pub fn backend_with_endpoint(&self, hash: u64) -> Option<&Backend> {
        self.backends.iter().find(|b| match &b.target {
            Target::Cluster(c) => c.has_endpoint(hash),
            Target::Invalid(_) => false,
        })
    }
}
