//! A route rule compiled for serving: its matches, its request pipeline
//! stages, weighted backends and metric handles.

use std::sync::{Arc, OnceLock};

use coxswain_ir::{BackendTarget, Filter, MatchSpecificity, Route, RouteId, Timeouts};

use crate::cluster::{ClusterSet, ClusterState};
use crate::http::session::SessionPolicy;
use crate::metrics::{Metrics, RouteMetrics, StatusCounters};
use crate::pipeline::RequestStages;
use crate::pipeline::extensions::ExtensionSet;
use crate::pipeline::headers::HeaderEdits;
use crate::retry::RetryPolicy;
use crate::router::{CompiledMatch, MatchError};
use crate::weighted::Weighted;

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
    /// The backendRef's own header edits (after the rule's).
    pub request_edits: Vec<HeaderEdits>,
    pub response_edits: Vec<HeaderEdits>,
    /// The `upstream` label of its series (`""` without a cluster).
    upstream: Box<str>,
    /// Its series, made on its first response ([`CompiledRoute::counters`]).
    counters: OnceLock<Arc<StatusCounters>>,
}

/// A backendRef's filters: header modifiers only (the translator refuses
/// any other).
fn backend_edits(filters: &[Filter]) -> (Vec<HeaderEdits>, Vec<HeaderEdits>) {
    let (mut request, mut response) = (Vec::new(), Vec::new());
    for filter in filters {
        match filter {
            Filter::RequestHeaders(m) => request.push(HeaderEdits::compile(m)),
            Filter::ResponseHeaders(m) => response.push(HeaderEdits::compile(m)),
            other => tracing::warn!(?other, "backendRef filter skipped"),
        }
    }
    (request, response)
}

#[derive(Debug)]
pub struct CompiledRoute {
    /// Shared with the access-log records of its requests.
    pub id: Arc<RouteId>,
    pub label: String,
    pub matches: Vec<CompiledMatch>,
    /// Precedence of each match, kept so a reused route is not re-ranked.
    pub specificity: Vec<MatchSpecificity>,
    /// The rule's request stages, in phase order.
    pub stages: RequestStages,
    /// The rule's ResponseHeaderModifier edits.
    pub response_edits: Vec<HeaderEdits>,
    backends: Weighted<Backend>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    /// The rule's session persistence. Boxed: 72 bytes most routes do not
    /// use.
    pub session: Option<Box<SessionPolicy>>,
    /// Where this route's series are made. They are made on its first
    /// request: most routes of a large config never see one, and the
    /// handles cost about 470 bytes per route. A route compiled while its
    /// label already has series (an edited rule) takes them at once, so
    /// it keeps counting across the config change.
    registry: Arc<Metrics>,
    metrics: OnceLock<Arc<RouteMetrics>>,
    /// Counters for responses with no upstream (redirects, 500s).
    local_counters: OnceLock<Arc<StatusCounters>>,
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
        (clusters, extensions): (&ClusterSet, &ExtensionSet),
        metrics: &Arc<Metrics>,
    ) -> Result<Self, MatchError> {
        // Pushed into an exact capacity: collecting through `Result` starts
        // at four slots (112 bytes each), and most routes have one match.
        let mut matches = Vec::with_capacity(route.matches.len());
        for m in &route.matches {
            matches.push(CompiledMatch::compile(m)?);
        }
        let label = route_label(&route.id);
        let existing = metrics.existing_route(&label);
        let backends = Weighted::new(route.backends.iter().map(|b| {
            let upstream = match &b.target {
                BackendTarget::Cluster(name) => name.as_str(),
                BackendTarget::Invalid { .. } => "",
            };
            let (request_edits, response_edits) = backend_edits(&b.filters);
            let backend = Backend {
                counters: once(
                    existing
                        .as_ref()
                        .and_then(|m| m.existing_upstream(upstream)),
                ),
                upstream: upstream.into(),
                target: Target::resolve(&b.target, clusters),
                request_edits,
                response_edits,
            };
            (b.weight, backend)
        }));
        let (stages, response_edits) = crate::pipeline::compile_stages(
            &route.filters,
            (clusters, extensions),
            metrics,
            &label,
        );
        Ok(CompiledRoute {
            id: Arc::new(route.id.clone()),
            matches,
            specificity: route.matches.iter().map(MatchSpecificity::of).collect(),
            stages,
            response_edits,
            backends,
            timeouts: route.timeouts.clone(),
            retry: RetryPolicy::compile(route.retry.as_ref()),
            session: route
                .session
                .as_ref()
                .and_then(SessionPolicy::compile)
                .map(Box::new),
            local_counters: OnceLock::new(),
            registry: metrics.clone(),
            metrics: once(existing),
            label,
        })
    }

    /// The route's series (made on first use).
    pub fn metrics(&self) -> &Arc<RouteMetrics> {
        self.metrics
            .get_or_init(|| self.registry.route(&self.label))
    }

    /// Counters for responses `backend` (one of this route's) gave.
    pub fn counters<'a>(&'a self, backend: &'a Backend) -> &'a Arc<StatusCounters> {
        backend
            .counters
            .get_or_init(|| self.metrics().upstream(&backend.upstream))
    }

    /// Counters for responses no upstream gave.
    pub fn local_counters(&self) -> &Arc<StatusCounters> {
        self.local_counters
            .get_or_init(|| self.metrics().upstream(""))
    }

    /// The request stages in the order they run, by the IR filter each
    /// came from (what `coxswain explain` prints).
    pub fn request_plan(&self) -> Vec<crate::pipeline::PlannedStage> {
        self.stages.plan()
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

/// A cell already holding `value`, if any.
fn once<T>(value: Option<T>) -> OnceLock<T> {
    let cell = OnceLock::new();
    if let Some(value) = value {
        let _ = cell.set(value);
    }
    cell
}
