//! A route rule compiled for serving: its matches, filters with pre-parsed
//! header names and values, weighted backends and metric handles.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use coxswain_ir::{
    BackendTarget, Config, Filter, HeaderModifier, MatchSpecificity, Redirect, Rewrite, Route,
    RouteId, Timeouts, UpstreamProtocol,
};
use http::{HeaderName, HeaderValue};

use crate::metrics::{Metrics, RouteMetrics, StatusCounters};
use crate::router::{CompiledMatch, MatchError};
use crate::weighted::Weighted;

/// An upstream cluster with its round-robin cursor.
#[derive(Debug)]
pub struct ClusterState {
    pub name: String,
    pub protocol: UpstreamProtocol,
    endpoints: Vec<SocketAddr>,
    next: AtomicUsize,
}

impl ClusterState {
    /// The next endpoint by round robin; `None` when there are none.
    pub fn next_endpoint(&self) -> Option<SocketAddr> {
        if self.endpoints.is_empty() {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        self.endpoints.get(i).copied()
    }

    /// Every endpoint, starting with the next one by round robin.
    pub fn endpoints_from_next(&self) -> Vec<SocketAddr> {
        if self.endpoints.is_empty() {
            return Vec::new();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        let (before, after) = self.endpoints.split_at(start);
        after.iter().chain(before).copied().collect()
    }
}

/// All clusters of one config by name.
#[derive(Debug, Default)]
pub struct ClusterSet(HashMap<String, Arc<ClusterState>>);

impl ClusterSet {
    pub fn compile(config: &Config) -> Self {
        let map = config
            .clusters
            .iter()
            .map(|c| {
                let state = ClusterState {
                    name: c.name.clone(),
                    protocol: c.protocol,
                    endpoints: c.endpoints.iter().map(|e| e.address).collect(),
                    next: AtomicUsize::new(0),
                };
                (c.name.clone(), Arc::new(state))
            })
            .collect();
        ClusterSet(map)
    }
}

/// Header edits with names and values already validated.
#[derive(Debug, Default)]
pub struct HeaderEdits {
    pub set: Vec<(HeaderName, HeaderValue)>,
    pub add: Vec<(HeaderName, HeaderValue)>,
    pub remove: Vec<HeaderName>,
}

impl HeaderEdits {
    fn compile(m: &HeaderModifier) -> Self {
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
}

fn compile_filters(filters: &[Filter]) -> Vec<RouteFilter> {
    filters
        .iter()
        .map(|f| match f {
            Filter::RequestHeaders(m) => RouteFilter::RequestHeaders(HeaderEdits::compile(m)),
            Filter::ResponseHeaders(m) => RouteFilter::ResponseHeaders(HeaderEdits::compile(m)),
            Filter::Redirect(r) => RouteFilter::Redirect(r.clone()),
            Filter::Rewrite(r) => RouteFilter::Rewrite(r.clone()),
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
            BackendTarget::Cluster(name) => match clusters.0.get(name) {
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
                filters: compile_filters(&b.filters),
            };
            (b.weight, backend)
        }));
        Ok(CompiledRoute {
            id: route.id.clone(),
            matches,
            specificity: route.matches.iter().map(MatchSpecificity::of).collect(),
            filters: compile_filters(&route.filters),
            backends,
            timeouts: route.timeouts.clone(),
            local_counters: route_metrics.upstream(""),
            metrics: route_metrics,
            label,
        })
    }

    /// Weighted random choice; `None` when no backend has weight.
    pub fn choose_backend(&self) -> Option<&Backend> {
        self.backends.choose()
    }
}
