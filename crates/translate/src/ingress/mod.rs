//! Classic `networking.k8s.io/v1` Ingress lowered onto the same IR as
//! HTTPRoute: our Ingresses' rules share one HTTP listener (and one HTTPS
//! listener per certificate) that the translator adds only when at least
//! one Ingress is ours. See docs/ingress.md.

mod annotate;
pub mod annotations;
mod backend;
mod canary;
mod class;
mod listeners;
mod paths;
mod problem;
mod rules;
mod status;
mod tls;

pub use listeners::{INGRESS_OWNER, listeners};
pub use problem::IngressProblem;
pub use status::IngressOutcome;
pub use status::outcomes;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::{ExtensionKey, ExtensionSpec, Listener, Route};

use crate::Options;
use crate::route::ClusterSpec;

/// Where and how Ingresses are served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngressOptions {
    /// Port of the plain HTTP listener.
    pub http_port: u16,
    /// Port of the HTTPS listener (only bound when some Ingress has TLS).
    pub https_port: u16,
    /// An Ingress naming this class is ours even when no IngressClass
    /// object of that name exists (files without an IngressClass).
    pub class: Option<String>,
    /// The address written to `status.loadBalancer.ingress`; the bind
    /// address when unset.
    pub status_address: Option<IpAddr>,
}

impl Default for IngressOptions {
    fn default() -> Self {
        IngressOptions {
            http_port: 80,
            https_port: 443,
            class: None,
            status_address: None,
        }
    }
}

/// Our Ingresses, compiled.
#[derive(Default)]
pub struct IngressModel {
    /// Oldest first (creationTimestamp, then namespace/name).
    pub ours: Vec<ObjectKey>,
    /// Every path rule of every Ingress of ours, oldest Ingress first,
    /// then the one default backend served.
    pub routes: Vec<Arc<Route>>,
    /// The same rules as the plain HTTP listener serves them: a rule whose
    /// annotations redirect to HTTPS answers with that redirect.
    pub plain_routes: Vec<Arc<Route>>,
    /// The filters annotations describe (no resource behind them).
    pub extensions: BTreeMap<ExtensionKey, ExtensionSpec>,
    pub certificates: tls::Certificates,
    pub clusters: Vec<ClusterSpec>,
    pub problems: BTreeMap<ObjectKey, Vec<IngressProblem>>,
}

pub fn build(snapshot: &Snapshot, options: &Options) -> IngressModel {
    let classes = class::Classes::new(snapshot, options);
    let mut ours: Vec<(&ObjectKey, &Ingress, &str)> = snapshot
        .ingresses
        .iter()
        .filter_map(|(key, ingress)| Some((key, ingress.as_ref(), classes.ours(ingress)?)))
        .collect();
    ours.sort_by(|a, b| {
        (a.1.metadata.creation_timestamp.as_ref(), a.0)
            .cmp(&(b.1.metadata.creation_timestamp.as_ref(), b.0))
    });
    let mut model = IngressModel::default();
    let mut default_backend: Option<(annotate::Served, &ObjectKey)> = None;
    let mut served: Vec<annotate::Served> = Vec::new();
    let mut canaries = Vec::new();
    for (key, ingress, class) in ours {
        let mut problems = Vec::new();
        if classes.has_parameters(class) {
            problems.push(IngressProblem::ClassParameters {
                class: class.to_string(),
            });
        }
        let (parsed, annotation_problems) = ingress
            .metadata
            .annotations
            .as_ref()
            .map(annotations::parse)
            .unwrap_or_default();
        problems.extend(
            annotation_problems
                .into_iter()
                .map(IngressProblem::Annotation),
        );
        let mut lowered = rules::lower(snapshot, key, ingress, &mut problems);
        let cx = annotate::Context {
            snapshot,
            key,
            ingress,
        };
        if let Some(canary) = parsed.canary.clone() {
            let applied = annotate::apply(
                &cx,
                &canary_only(&parsed, &mut problems),
                &mut lowered,
                &mut problems,
            );
            if applied.default_backend.is_some() {
                problems.push(IngressProblem::AnnotationEffect {
                    annotation: format!("{}canary", annotations::COXSWAIN_PREFIX),
                    why: "the defaultBackend of a canary Ingress is not served".into(),
                });
            }
            model.extensions.extend(applied.extensions);
            model.clusters.extend(lowered.clusters);
            canaries.push(canary::CanaryIngress {
                key: key.clone(),
                canary,
                routes: applied.routes.into_iter().map(|s| s.route).collect(),
            });
            tls::collect(
                snapshot,
                key,
                ingress,
                &mut model.certificates,
                &mut problems,
            );
            model.ours.push(key.clone());
            model.problems.insert(key.clone(), problems);
            continue;
        }
        let applied = annotate::apply(&cx, &parsed, &mut lowered, &mut problems);
        served.extend(applied.routes);
        model.extensions.extend(applied.extensions);
        model.clusters.extend(lowered.clusters);
        match (&default_backend, applied.default_backend) {
            (None, Some(route)) => default_backend = Some((route, key)),
            (Some((_, by)), Some(_)) => {
                problems.push(IngressProblem::DefaultBackendTaken { by: by.to_string() })
            }
            (_, None) => {}
        }
        tls::collect(
            snapshot,
            key,
            ingress,
            &mut model.certificates,
            &mut problems,
        );
        model.ours.push(key.clone());
        model.problems.insert(key.clone(), problems);
    }
    for (key, problem) in canary::join(&mut served, canaries) {
        model.problems.entry(key).or_default().push(problem);
    }
    // Last: among equally specific matches IR order decides, and the
    // default backend is only for what no rule takes.
    served.extend(default_backend.map(|(route, _)| route));
    let https_port = options.ingress.https_port;
    for s in served {
        let route = Arc::new(s.route);
        model.plain_routes.push(match s.redirect {
            true => Arc::new(annotate::redirected(&route, https_port)),
            false => route.clone(),
        });
        model.routes.push(route);
    }
    // A default backend that is not served sends nowhere.
    let used: std::collections::BTreeSet<&str> = model
        .routes
        .iter()
        .flat_map(|r| &r.backends)
        .filter_map(|b| match &b.target {
            coxswain_ir::BackendTarget::Cluster(name) => Some(name.as_str()),
            coxswain_ir::BackendTarget::Invalid { .. } => None,
        })
        .collect();
    let clusters = std::mem::take(&mut model.clusters);
    model.clusters = clusters
        .into_iter()
        .filter(|c| used.contains(c.name.as_str()))
        .collect();
    model
}

/// What a canary Ingress's own annotations may set: how its backends are
/// spoken to and how its paths match. The rest comes from the main rule
/// it joins; anything else it sets is reported.
fn canary_only(
    parsed: &annotations::Annotations,
    problems: &mut Vec<IngressProblem>,
) -> annotations::Annotations {
    let kept = annotations::Annotations {
        load_balancer: parsed.load_balancer.clone(),
        backend_protocol: parsed.backend_protocol,
        connect_timeout_ms: parsed.connect_timeout_ms,
        use_regex: parsed.use_regex,
        ..annotations::Annotations::default()
    };
    let rest = annotations::Annotations {
        canary: None,
        ..parsed.clone()
    };
    if rest != kept {
        problems.push(IngressProblem::AnnotationEffect {
            annotation: format!("{}canary", annotations::COXSWAIN_PREFIX),
            why: "a canary Ingress takes the main rule's filters, rewrites, redirects and timeouts; its own (other than load-balancer, backend-protocol, proxy-connect-timeout, use-regex) have no effect".into(),
        });
    }
    kept
}

/// Reports every Ingress listener of one socket that a Gateway listener
/// with the same hostname (sorted before it) takes the requests of.
pub fn report_shadowed(model: &mut IngressModel, port: u16, listeners: &[(bool, Listener)]) {
    for (i, (is_ingress, listener)) in listeners.iter().enumerate() {
        if !is_ingress {
            continue;
        }
        let gateway = listeners
            .iter()
            .take(i)
            .find(|(ingress, l)| !ingress && l.hostname == listener.hostname);
        let Some((_, gateway)) = gateway else {
            continue;
        };
        let owner = listener
            .hostname
            .as_ref()
            .and_then(|h| model.certificates.get(&Some(h.clone())))
            .map(|(_, key)| key.clone());
        let problem = IngressProblem::ShadowedByGateway {
            port,
            hostname: listener
                .hostname
                .as_ref()
                .map_or("*".to_string(), ToString::to_string),
            gateway: format!("{}/{}", gateway.gateway, gateway.name),
        };
        for (key, problems) in model.problems.iter_mut() {
            if owner.as_ref().is_none_or(|o| o == key) {
                problems.push(problem.clone());
            }
        }
    }
}
