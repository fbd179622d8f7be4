//! Ingress annotations, read by the translator's own parser
//! (`coxswain_translate::annotations`), onto Gateway API filters and the
//! Coxswain resources they refer to. What has no equivalent is reported.

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_translate::annotations::{
    self, AnnotationProblem, Annotations, BackendProtocol, Balancer, BodyLimit, Canary,
    CompressionAnnotation, Cors, HashKey, IpAccessAnnotation,
};
use serde_json::{Value, json};

use super::report::Report;

const GROUP: &str = "gateway.coxswain-labs.dev";
const VERSION: &str = "gateway.coxswain-labs.dev/v1alpha1";
/// ingress-nginx's default `http-redirect-code`.
const SSL_REDIRECT_CODE: u16 = 308;

/// What an Ingress's annotations add to its routes.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// Filters on every rule.
    pub filters: Vec<Value>,
    /// HTTPRoute rule `timeouts`.
    pub timeouts: Option<Value>,
    /// Resources the filters refer to, and backend policies.
    pub objects: Vec<Value>,
    /// A security annotation cannot be enforced: the rules keep no
    /// backendRefs, so they answer 500 rather than serve unprotected.
    pub fail_closed: bool,
    /// `use-regex`: Prefix paths are regular expressions anchored at the
    /// start, case-insensitive.
    pub regex_paths: bool,
    /// `rewrite-target` with capture groups, as a substitution (`/${2}`).
    pub rewrite_captures: Option<String>,
    /// Plain HTTP is redirected to HTTPS: for the Ingress's TLS hosts
    /// (`ssl-redirect`) or every host (`force-ssl-redirect`).
    pub redirect: Option<Redirect>,
    /// This Ingress is a canary of another's rules.
    pub canary: Option<Canary>,
    /// Services of this Ingress that get a CoxswainBackendPolicy.
    pub policy_services: Vec<String>,
}

/// The Services an Ingress names.
#[derive(Clone, Debug, Default)]
pub struct Used {
    pub services: Vec<String>,
}

impl Used {
    pub fn of(ingress: &Ingress) -> Self {
        let mut used = Used::default();
        let Some(spec) = ingress.spec.as_ref() else {
            return used;
        };
        let rules = spec.rules.iter().flatten();
        let paths = rules.flat_map(|r| r.http.iter().flat_map(|h| &h.paths));
        let mut backends: Vec<_> = spec.default_backend.iter().collect();
        backends.extend(paths.map(|p| &p.backend));
        for backend in backends {
            if let Some(service) = &backend.service
                && !used.services.contains(&service.name)
            {
                used.services.push(service.name.clone());
            }
        }
        used
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirect {
    TlsHosts,
    Every,
}

impl Redirect {
    pub const STATUS: u16 = SSL_REDIRECT_CODE;
}

pub fn convert(
    snapshot: &Snapshot,
    key: &ObjectKey,
    ingress: &Ingress,
    used: &Used,
    report: &mut Report,
) -> Extras {
    let none = std::collections::BTreeMap::new();
    let map = ingress.metadata.annotations.as_ref().unwrap_or(&none);
    let (parsed, problems) = annotations::parse(map);
    for problem in problems {
        match &problem {
            AnnotationProblem::Unsupported { name }
            | AnnotationProblem::Invalid { name, .. }
            | AnnotationProblem::Refused { name, .. } => {
                report.lost(key, name.as_str(), problem.to_string())
            }
            AnnotationProblem::Conflict { coxswain, .. } => {
                report.note(key, coxswain.as_str(), problem.to_string())
            }
        }
    }
    let mut extras = Extras {
        fail_closed: !parsed.unenforceable.is_empty(),
        canary: parsed.canary.clone(),
        ..Extras::default()
    };
    for name in &parsed.unenforceable {
        report.lost(
            key,
            name.as_str(),
            "cannot be enforced: the rules keep no backendRefs and answer 500, as the Ingress does",
        );
    }
    let object = |kind: &str, suffix: &str, spec: Value| {
        json!({
            "apiVersion": VERSION,
            "kind": kind,
            "metadata": {"name": format!("{}-{suffix}", key.name), "namespace": key.namespace},
            "spec": spec,
        })
    };
    // Filters in the Ingress lowering's order (the phases decide what
    // runs first; within one phase this order does).
    let mut extension = |kind: &str, name: String| json!({"type": "ExtensionRef", "extensionRef": {"group": GROUP, "kind": kind, "name": name}});
    if let Some(basic) = &parsed.basic_auth {
        check_htpasswd(snapshot, key, &basic.secret, report);
        let mut spec = json!({"secretRef": {"name": basic.secret}});
        if let (Some(realm), Some(map)) = (&basic.realm, spec.as_object_mut()) {
            map.insert("realm".into(), Value::String(realm.clone()));
        }
        extras.objects.push(object("BasicAuth", "basic-auth", spec));
        extras
            .filters
            .push(extension("BasicAuth", format!("{}-basic-auth", key.name)));
    }
    ip_access(&parsed, key, report, &mut extras, &object, &mut extension);
    if let Some(jwt) = &parsed.jwt_auth {
        extras.filters.push(extension("JwtAuth", jwt.clone()));
    }
    match parsed.max_body_size {
        Some(BodyLimit::Bytes(n)) => {
            extras.objects.push(object(
                "RequestSizeLimit",
                "body-size",
                json!({"maxSize": n.to_string()}),
            ));
            extras.filters.push(extension(
                "RequestSizeLimit",
                format!("{}-body-size", key.name),
            ));
        }
        Some(BodyLimit::Unlimited) | None => {}
    }
    match &parsed.compression {
        Some(CompressionAnnotation::Resource(name)) => {
            extras.filters.push(extension("Compression", name.clone()));
        }
        Some(CompressionAnnotation::Defaults) => {
            extras.objects.push(object(
                "Compression",
                "compression",
                json!({"gzip": true, "brotli": true}),
            ));
            extras.filters.push(extension(
                "Compression",
                format!("{}-compression", key.name),
            ));
        }
        None => {}
    }
    if let Some(cors) = &parsed.cors {
        extras.filters.push(cors_filter(cors));
    }
    rewrite(&parsed, key, report, &mut extras);
    default_redirect_note(key, ingress, map, report);
    extras.redirect = if parsed.force_ssl_redirect {
        Some(Redirect::Every)
    } else if parsed.ssl_redirect {
        Some(Redirect::TlsHosts)
    } else {
        None
    };
    if let Some(ms) = parsed.backend_timeout_ms {
        extras.timeouts = Some(json!({"backendRequest": duration(ms)}));
    }
    backend_policy(&parsed, key, &used.services, report, &mut extras, &object);
    backend_protocol(snapshot, &parsed, key, &used.services, report);
    extras
}

/// ingress-nginx redirects plain HTTP to a `tls` host by default; Coxswain
/// (Ingress and migrated alike) only when `ssl-redirect` says so.
fn default_redirect_note(
    key: &ObjectKey,
    ingress: &Ingress,
    map: &std::collections::BTreeMap<String, String>,
    report: &mut Report,
) {
    let has_tls = ingress
        .spec
        .as_ref()
        .and_then(|s| s.tls.as_ref())
        .is_some_and(|t| !t.is_empty());
    let said = ["ssl-redirect", "force-ssl-redirect"].iter().any(|name| {
        [annotations::COXSWAIN_PREFIX, annotations::NGINX_PREFIX]
            .iter()
            .any(|prefix| map.contains_key(&format!("{prefix}{name}")))
    });
    if has_tls && !said {
        report.note(
            key,
            "tls",
            "ingress-nginx redirects plain HTTP to these hosts by default; Coxswain does only with ssl-redirect: \"true\" (add it before migrating to keep the redirect)",
        );
    }
}

fn ip_access(
    parsed: &Annotations,
    key: &ObjectKey,
    report: &mut Report,
    extras: &mut Extras,
    object: &impl Fn(&str, &str, Value) -> Value,
    extension: &mut impl FnMut(&str, String) -> Value,
) {
    match &parsed.ip_access {
        Some(IpAccessAnnotation::Resource(name)) => {
            if parsed.trust_forwarded_for.is_some() {
                report.lost(
                    key,
                    "ingress.coxswain-labs.dev/trust-forwarded-for",
                    format!("not applied to IpAccessControl {name}: set its spec.xForwardedFor.trustedHops"),
                );
            }
            extras
                .filters
                .push(extension("IpAccessControl", name.clone()));
        }
        Some(IpAccessAnnotation::Ranges { allow, deny }) => {
            let text = |list: &[coxswain_ir::IpCidr]| -> Vec<String> {
                list.iter().map(ToString::to_string).collect()
            };
            let mut spec = json!({"allow": text(allow), "deny": text(deny)});
            if let (Some(hops), Some(map)) = (parsed.trust_forwarded_for, spec.as_object_mut()) {
                map.insert("xForwardedFor".into(), json!({"trustedHops": hops}));
            }
            extras
                .objects
                .push(object("IpAccessControl", "ip-access", spec));
            extras.filters.push(extension(
                "IpAccessControl",
                format!("{}-ip-access", key.name),
            ));
        }
        None => {
            if parsed.trust_forwarded_for.is_some()
                && !matches!(
                    parsed.load_balancer,
                    Some(Balancer::Hash(HashKey::SourceIp))
                )
            {
                report.note(
                    key,
                    "ingress.coxswain-labs.dev/trust-forwarded-for",
                    "no IP access list or source-IP hashing uses it; nothing to migrate",
                );
            }
        }
    }
}

/// Warns when the htpasswd Secret lacks the label Coxswain requires (the
/// BasicAuth refuses it then, as the Ingress annotation does).
fn check_htpasswd(snapshot: &Snapshot, key: &ObjectKey, secret: &str, report: &mut Report) {
    let found = snapshot
        .secrets
        .get(&ObjectKey::new(key.namespace.clone(), secret));
    let labelled = found.is_some_and(|s| {
        s.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("ingress.coxswain-labs.dev/auth-basic"))
            .is_some_and(|v| v == "true")
    });
    if found.is_some() && !labelled {
        report.lost(
            key,
            "auth-basic-secret",
            format!("Secret {secret} lacks the label ingress.coxswain-labs.dev/auth-basic: \"true\"; until it has it the BasicAuth answers 503 (as the Ingress annotation does)"),
        );
    }
}

fn cors_filter(cors: &Cors) -> Value {
    json!({"type": "CORS", "cors": {
        "allowOrigins": cors.allow_origins,
        "allowMethods": cors.allow_methods,
        "allowHeaders": cors.allow_headers,
        "exposeHeaders": cors.expose_headers,
        "allowCredentials": cors.allow_credentials,
        "maxAge": cors.max_age_s,
    }})
}

/// nginx's `rewrite-target` replaces the whole path: a fixed target is a
/// URLRewrite to that full path; one with capture groups ($1...) of a
/// `use-regex` path is a PathRewriteRegex over the whole path.
fn rewrite(parsed: &Annotations, key: &ObjectKey, report: &mut Report, extras: &mut Extras) {
    extras.regex_paths = parsed.use_regex;
    let Some(target) = &parsed.rewrite_target else {
        return;
    };
    if !annotations::has_captures(target) {
        extras
            .filters
            .push(json!({"type": "URLRewrite", "urlRewrite": {
                "path": {"type": "ReplaceFullPath", "replaceFullPath": target},
            }}));
    } else if parsed.use_regex {
        // One PathRewriteRegex per rule, over that rule's expression.
        extras.rewrite_captures = Some(annotations::substitution(target));
    } else {
        report.lost(
            key,
            "rewrite-target",
            "capture groups ($1...) need use-regex: \"true\"; the path is sent unchanged, as by the Ingress",
        );
    }
}

fn backend_policy(
    parsed: &Annotations,
    key: &ObjectKey,
    services: &[String],
    report: &mut Report,
    extras: &mut Extras,
    object: &impl Fn(&str, &str, Value) -> Value,
) {
    if parsed.load_balancer.is_none() && parsed.connect_timeout_ms.is_none() {
        return;
    }
    let mut spec = serde_json::Map::new();
    if let Some(balancer) = &parsed.load_balancer {
        spec.insert(
            "loadBalancer".into(),
            json!({"algorithm": algorithm(balancer)}),
        );
    }
    if let Some(ms) = parsed.connect_timeout_ms {
        spec.insert("timeouts".into(), json!({"connect": duration(ms)}));
    }
    for service in services {
        let mut spec = spec.clone();
        spec.insert(
            "targetRefs".into(),
            json!([{"group": "", "kind": "Service", "name": service}]),
        );
        extras.objects.push(object(
            "CoxswainBackendPolicy",
            service,
            Value::Object(spec),
        ));
        extras.policy_services.push(service.clone());
    }
    report.note(
        key,
        "load-balancer / proxy-connect-timeout",
        format!(
            "a CoxswainBackendPolicy per Service ({}): it applies to every route to those Services, not only this Ingress's",
            services.join(", ")
        ),
    );
}

fn backend_protocol(
    snapshot: &Snapshot,
    parsed: &Annotations,
    key: &ObjectKey,
    services: &[String],
    report: &mut Report,
) {
    let Some(protocol) = parsed.backend_protocol else {
        return;
    };
    let at = "backend-protocol";
    match protocol {
        BackendProtocol::Http => {}
        BackendProtocol::H2c | BackendProtocol::Grpc => {
            for service in services {
                let has = snapshot
                    .services
                    .get(&ObjectKey::new(key.namespace.clone(), service.clone()))
                    .and_then(|s| s.spec.as_ref()?.ports.clone())
                    .is_some_and(|ports| {
                        ports
                            .iter()
                            .all(|p| p.app_protocol.as_deref() == Some("kubernetes.io/h2c"))
                    });
                if !has {
                    report.lost(
                        key,
                        at,
                        format!("{}: set appProtocol: kubernetes.io/h2c on the ports of Service {service} (Gateway API reads the protocol from the Service)", protocol.as_str()),
                    );
                }
            }
        }
        BackendProtocol::Https | BackendProtocol::Grpcs => report.lost(
            key,
            at,
            format!("{}: write a BackendTLSPolicy for the Services ({}) saying how to verify them; not generated", protocol.as_str(), services.join(", ")),
        ),
    }
}

fn algorithm(balancer: &Balancer) -> String {
    match balancer {
        Balancer::RoundRobin => "round_robin".into(),
        Balancer::LeastConn => "least_conn".into(),
        Balancer::Ewma => "ewma".into(),
        Balancer::Hash(HashKey::SourceIp) => "hash:source-ip".into(),
        Balancer::Hash(HashKey::Uri) => "hash:uri".into(),
        Balancer::Hash(HashKey::Header(name)) => format!("hash:header={name}"),
        Balancer::Hash(HashKey::Cookie(name)) => format!("hash:cookie={name}"),
    }
}

/// A Gateway API duration (`30s`, `1500ms`).
pub fn duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}
