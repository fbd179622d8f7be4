//! An Ingress's annotations applied to its lowered rules, onto the same
//! IR as an HTTPRoute rule with the equivalent filters: auth and limits
//! as Coxswain filters (a resource the annotation names, or one it
//! describes, resolved by the same code), CORS, rewrites and redirects as
//! the standard filters, timeouts as the rule's, and connection settings
//! on the Ingress's own copy of its clusters.

use std::collections::BTreeMap;

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::{
    BackendTarget, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, IpAccess, PathMatch,
    PathModifier, Redirect, Rewrite, Route, RouteKind, UpstreamProtocol,
};

use super::annotations::{
    Annotations, BackendProtocol, BodyLimit, CompressionAnnotation, IpAccessAnnotation,
    has_captures, substitution,
};
use super::problem::IngressProblem;
use super::rules::Lowered;
use crate::extension::{self, GROUP, RefOutcome};
use crate::route::backends::AnnotatedCluster;

/// A rule as served: `redirect` when plain HTTP to it goes to HTTPS.
pub struct Served {
    pub route: Route,
    pub redirect: bool,
}

/// One Ingress's rules with its annotations applied.
#[derive(Default)]
pub struct Applied {
    pub routes: Vec<Served>,
    pub default_backend: Option<Served>,
    /// The filters the annotations describe, by the key their rules use.
    pub extensions: BTreeMap<ExtensionKey, ExtensionSpec>,
}

pub struct Context<'a> {
    pub snapshot: &'a Snapshot,
    pub key: &'a ObjectKey,
    pub ingress: &'a Ingress,
}

pub fn apply(
    cx: &Context<'_>,
    a: &Annotations,
    lowered: &mut Lowered,
    problems: &mut Vec<IngressProblem>,
) -> Applied {
    let mut out = Applied::default();
    own_clusters(cx.key, a, lowered);
    let filters = rule_filters(cx, a, &mut out.extensions, problems);
    let tls_hosts = tls_hosts(cx.ingress);
    if a.ssl_redirect && !a.force_ssl_redirect && tls_hosts.is_empty() {
        problems.push(effect(
            &spelled(cx, "ssl-redirect", Some("ssl-redirect")),
            "the Ingress has no tls section: nothing is redirected",
        ));
    }
    let mut rewrite_reported = false;
    for mut route in std::mem::take(&mut lowered.routes) {
        if a.use_regex && !regex_path(&mut route, problems) {
            continue;
        }
        route.filters = filters.clone();
        if let Some(target) = &a.rewrite_target {
            let rewrite = rewrite(cx, &route, target, &mut out.extensions);
            match rewrite {
                Ok(filter) => route.filters.push(filter),
                Err(why) if !rewrite_reported => {
                    rewrite_reported = true;
                    problems.push(effect(
                        &spelled(cx, "rewrite-target", Some("rewrite-target")),
                        &why,
                    ));
                }
                Err(_) => {}
            }
        }
        route.timeouts.backend_request_ms = a.backend_timeout_ms;
        let has_tls = tls_hosts.contains(&None)
            || route
                .hostnames
                .iter()
                .any(|h| tls_hosts.iter().any(|t| t.as_deref() == Some(h.as_str())));
        let redirect = a.force_ssl_redirect || (a.ssl_redirect && has_tls);
        out.routes.push(Served { route, redirect });
    }
    if let Some(mut route) = lowered.default_backend.take() {
        route.filters = filters;
        route.timeouts.backend_request_ms = a.backend_timeout_ms;
        out.default_backend = Some(Served {
            route,
            redirect: a.force_ssl_redirect,
        });
    }
    out
}

/// The plain-HTTP twin of a rule that redirects to HTTPS (308, as
/// ingress-nginx answers).
pub fn redirected(route: &Route, https_port: u16) -> Route {
    let mut r = route.clone();
    r.filters = vec![Filter::Redirect(Redirect {
        scheme: Some("https".into()),
        hostname: None,
        port: Some(https_port),
        path: None,
        status_code: 308,
    })];
    r
}

fn effect(annotation: &str, why: &str) -> IngressProblem {
    IngressProblem::AnnotationEffect {
        annotation: annotation.to_string(),
        why: why.to_string(),
    }
}

/// The annotation as the Ingress spells it: Coxswain's name when set,
/// else ingress-nginx's `nginx` name when that is.
fn spelled(cx: &Context<'_>, name: &str, nginx: Option<&str>) -> String {
    let map = cx.ingress.metadata.annotations.as_ref();
    let ours = format!("{}{name}", super::annotations::COXSWAIN_PREFIX);
    let theirs = nginx.map(|n| format!("{}{n}", super::annotations::NGINX_PREFIX));
    match (map, theirs) {
        (Some(m), Some(t)) if !m.contains_key(&ours) && m.contains_key(&t) => t,
        _ => ours,
    }
}

/// The `tls` hosts of the Ingress; `None` for an entry without hosts.
fn tls_hosts(ingress: &Ingress) -> Vec<Option<String>> {
    let entries = ingress.spec.as_ref().and_then(|s| s.tls.as_deref());
    let mut out = Vec::new();
    for entry in entries.unwrap_or_default() {
        match entry.hosts.as_deref() {
            None | Some([]) => out.push(None),
            Some(hosts) => out.extend(hosts.iter().map(|h| Some(h.clone()))),
        }
    }
    out
}

/// The name of a filter an annotation describes: never a resource's name
/// (those have no `:`), one per Ingress and kind (or rule).
fn inline_key(key: &ObjectKey, kind: ExtensionKind, suffix: Option<u32>) -> ExtensionKey {
    let name = match suffix {
        None => format!("Ingress:{}", key.name),
        Some(rule) => format!("Ingress:{}:{rule}", key.name),
    };
    ExtensionKey {
        kind,
        namespace: key.namespace.to_string(),
        name,
    }
}

fn rule_filters(
    cx: &Context<'_>,
    a: &Annotations,
    extensions: &mut BTreeMap<ExtensionKey, ExtensionSpec>,
    problems: &mut Vec<IngressProblem>,
) -> Vec<Filter> {
    if !a.unenforceable.is_empty() {
        problems.push(IngressProblem::NotServedUnprotected {
            annotations: a.unenforceable.clone(),
        });
        return vec![Filter::Deny {
            status: 500,
            reason: format!(
                "security annotations that cannot be enforced: {}",
                a.unenforceable.join(", ")
            ),
        }];
    }
    let mut filters = Vec::new();
    let mut inline = |kind, spec: ExtensionSpec, filters: &mut Vec<Filter>| {
        let k = inline_key(cx.key, kind, None);
        extensions.insert(k.clone(), spec);
        filters.push(Filter::Extension(k));
    };
    if let Some(basic) = &a.basic_auth {
        let spec = extension::inline_basic_auth(
            cx.snapshot,
            &cx.key.namespace,
            &basic.secret,
            basic.realm.as_deref(),
        );
        if let ExtensionSpec::Broken { status, reason } = &spec {
            problems.push(effect(
                &spelled(cx, "auth-basic-secret", Some("auth-secret")),
                &format!("{reason}; requests answer {status}"),
            ));
        }
        inline(ExtensionKind::BasicAuth, spec, &mut filters);
    }
    match &a.ip_access {
        Some(IpAccessAnnotation::Ranges { allow, deny }) => {
            let spec = ExtensionSpec::IpAccess(IpAccess {
                allow: allow.clone(),
                deny: deny.clone(),
                xff_trusted_hops: a.trust_forwarded_for.unwrap_or(0),
            });
            inline(ExtensionKind::IpAccessControl, spec, &mut filters);
        }
        Some(IpAccessAnnotation::Resource(name)) => {
            if a.trust_forwarded_for.is_some() {
                problems.push(effect(
                    &spelled(cx, "trust-forwarded-for", None),
                    "has no effect with ip-access-control: set the IpAccessControl's spec.xForwardedFor",
                ));
            }
            filters.push(by_ref(
                cx,
                "ip-access-control",
                "IpAccessControl",
                name,
                problems,
            ));
        }
        None if a.trust_forwarded_for.is_some() => problems.push(effect(
            &spelled(cx, "trust-forwarded-for", None),
            "has no effect without allowlist-source-range or denylist-source-range",
        )),
        None => {}
    }
    if let Some(name) = &a.jwt_auth {
        filters.push(by_ref(cx, "auth-jwt", "JwtAuth", name, problems));
    }
    if let Some(BodyLimit::Bytes(max_bytes)) = a.max_body_size {
        let spec = ExtensionSpec::SizeLimit { max_bytes };
        inline(ExtensionKind::RequestSizeLimit, spec, &mut filters);
    }
    match &a.compression {
        Some(CompressionAnnotation::Defaults) => {
            let spec = extension::default_compression();
            inline(ExtensionKind::Compression, spec, &mut filters);
        }
        Some(CompressionAnnotation::Resource(name)) => {
            filters.push(by_ref(cx, "compression", "Compression", name, problems));
        }
        None => {}
    }
    if let Some(cors) = &a.cors {
        filters.push(Filter::Cors(cors.clone()));
    }
    filters
}

/// A filter resource an annotation names, as an ExtensionRef would; one
/// that does not exist answers 500.
fn by_ref(
    cx: &Context<'_>,
    annotation: &str,
    kind: &str,
    name: &str,
    problems: &mut Vec<IngressProblem>,
) -> Filter {
    match extension::resolve_ref(
        cx.snapshot,
        RouteKind::Ingress,
        &cx.key.namespace,
        (GROUP, kind, name),
    ) {
        RefOutcome::Filter(filter, unresolved) => {
            if let Some((_, why)) = unresolved {
                problems.push(effect(
                    &spelled(cx, annotation, None),
                    &format!("{why}; requests answer 500"),
                ));
            }
            filter
        }
        RefOutcome::NotForRouteKind(why) => {
            problems.push(effect(
                &spelled(cx, annotation, None),
                &format!("{why}; requests answer 500"),
            ));
            Filter::Deny {
                status: 500,
                reason: why,
            }
        }
    }
}

/// `use-regex`: a Prefix path becomes a regular expression matched at the
/// start of the path, case-insensitively (as ingress-nginx's `~*`).
/// `false` when it does not compile (the rule is not served).
fn regex_path(route: &mut Route, problems: &mut Vec<IngressProblem>) -> bool {
    for m in &mut route.matches {
        if let PathMatch::Prefix(p) = &m.path {
            let pattern = format!("(?i:{p}).*");
            let checked = regex::RegexBuilder::new(&pattern)
                .size_limit(coxswain_ir::MAX_REGEX_SIZE)
                .build();
            if let Err(e) = checked {
                problems.push(IngressProblem::InvalidPath {
                    at: format!("rule {}", route.id.rule_index),
                    why: format!("use-regex: path {p:?} is not a regular expression: {e}"),
                });
                return false;
            }
            m.path = PathMatch::Regex(pattern);
        }
    }
    true
}

/// `rewrite-target` for one rule: the whole path replaced, capture groups
/// of a regex path substituted (a PathRewriteRegex the annotation
/// describes).
fn rewrite(
    cx: &Context<'_>,
    route: &Route,
    target: &str,
    extensions: &mut BTreeMap<ExtensionKey, ExtensionSpec>,
) -> Result<Filter, String> {
    if !has_captures(target) {
        return Ok(Filter::Rewrite(Rewrite {
            hostname: None,
            path: Some(PathModifier::ReplaceFullPath(target.to_string())),
        }));
    }
    let regex = route.matches.iter().find_map(|m| match &m.path {
        PathMatch::Regex(p) => Some(p.clone()),
        _ => None,
    });
    let Some(regex) = regex else {
        return Err("capture groups ($1…) need use-regex: \"true\" and a Prefix or ImplementationSpecific path; the path is sent unchanged".into());
    };
    let pattern = format!("^(?:{regex})$");
    let substitution = substitution(target);
    extension::check_path_rewrite(&pattern, &substitution)
        .map_err(|e| format!("{e}; the path is sent unchanged"))?;
    let key = inline_key(
        cx.key,
        ExtensionKind::PathRewriteRegex,
        Some(route.id.rule_index),
    );
    extensions.insert(
        key.clone(),
        ExtensionSpec::PathRewrite {
            pattern,
            substitution,
        },
    );
    Ok(Filter::Extension(key))
}

/// `load-balancer`, `backend-protocol` and `proxy-connect-timeout` are
/// settings of the connection to the Service, which HTTPRoutes and other
/// Ingresses share: this Ingress gets its own copy of each cluster
/// (`<cluster>@Ingress/<namespace>/<name>`) so nobody else's changes.
fn own_clusters(key: &ObjectKey, a: &Annotations, lowered: &mut Lowered) {
    if a.load_balancer.is_none() && a.backend_protocol.is_none() && a.connect_timeout_ms.is_none() {
        return;
    }
    let mut renamed = BTreeMap::new();
    for spec in &mut lowered.clusters {
        let name = format!("{}@Ingress/{key}", spec.name);
        renamed.insert(spec.name.clone(), name.clone());
        spec.name = name;
        if let Some(p) = a.backend_protocol {
            (spec.protocol, spec.requires_tls) = match p {
                BackendProtocol::Http => (UpstreamProtocol::Http1, false),
                BackendProtocol::Https => (UpstreamProtocol::Http1, true),
                BackendProtocol::Grpc | BackendProtocol::H2c => (UpstreamProtocol::H2c, false),
                BackendProtocol::Grpcs => (UpstreamProtocol::H2c, true),
            };
        }
        spec.annotated = Some(AnnotatedCluster {
            by: key.to_string(),
            balancer: a.load_balancer.clone(),
            connect_timeout_ms: a.connect_timeout_ms,
        });
    }
    let routes = lowered
        .routes
        .iter_mut()
        .chain(lowered.default_backend.as_mut());
    for backend in routes.flat_map(|r| r.backends.iter_mut()) {
        if let BackendTarget::Cluster(name) = &mut backend.target
            && let Some(new) = renamed.get(name)
        {
            *name = new.clone();
        }
    }
}
