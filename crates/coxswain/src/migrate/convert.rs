//! Ingress → Gateway API: the selected Ingresses, oldest first, become
//! path rules grouped per host (see `routes`), TLS hosts become Gateway
//! listeners (see `gateway`), annotations become filters and Coxswain
//! resources (see `annotations`). Everything that does not carry over
//! exactly goes into the report.

use std::collections::BTreeSet;
use std::sync::Arc;

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::Hostname;
use serde_json::Value;

use super::annotations::{self, Extras, Used};
use super::backend::target;
use super::canary::{self, CanaryBackend};
use super::checks;
use super::gateway::{self, TlsHost};
use super::report::Report;
use super::routes;

/// What the user chose on the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Only Ingresses of this class (all when `None`).
    pub ingress_class: Option<String>,
    pub gateway_class: String,
    pub controller_name: String,
    pub gateway_name: String,
    /// `None`: the Ingresses' namespace when they share one, else `default`.
    pub gateway_namespace: Option<String>,
    pub http_port: u16,
    pub https_port: u16,
}

/// One object to write, and the file it belongs in (`--output DIR`).
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub file: String,
    pub object: Value,
}

pub struct Migration {
    pub documents: Vec<Document>,
    pub report: Report,
}

/// How an Ingress path matches, as Gateway API spells it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathKind {
    Exact,
    PathPrefix,
    /// `use-regex` paths: case-insensitive, anchored at the start, so
    /// `(?i:PATH).*` (the Ingress lowering's own expression).
    RegularExpression,
}

/// Where a rule sends requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Service {
        name: String,
        port: i32,
    },
    /// The port could not be resolved: the rule keeps no backendRefs, so
    /// it answers 500 as the Ingress did.
    Unresolved,
}

/// One Ingress path, ready to become an HTTPRoute rule.
#[derive(Clone, Debug)]
pub struct PathRule {
    pub host: Option<String>,
    pub kind: PathKind,
    pub path: String,
    pub target: Target,
    /// Where it came from in the Ingress (`rules[0].http.paths[1]`).
    pub at: String,
    /// A canary Ingress's backend for the same host and path.
    pub canary: Option<CanaryBackend>,
    /// The PathRewriteRegex of this rule (`rewrite-target` with captures).
    pub rewrite: Option<String>,
}

/// One Ingress's part of the migration.
pub struct Migrated<'a> {
    pub key: &'a ObjectKey,
    pub rules: Vec<PathRule>,
    pub default_backend: Option<PathRule>,
    pub extras: Extras,
    /// The hosts of its `tls` entries (what ssl-redirect redirects);
    /// `None` for an entry without hosts (every host).
    pub tls_hosts: Vec<Option<String>>,
}

pub fn convert(snapshot: &Snapshot, settings: &Settings) -> Migration {
    let mut report = Report::default();
    let selected = super::read::selected(snapshot, settings.ingress_class.as_deref());
    let gateway = gateway_key(settings, &selected);
    // (host, kind, path) of every rule already served: an equal match in
    // a younger Ingress (or later in the same one) is never reached.
    let mut served: BTreeSet<(Option<String>, PathKind, String)> = BTreeSet::new();
    let mut default_taken: Option<&ObjectKey> = None;
    let mut tls_hosts: Vec<TlsHost> = Vec::new();
    let mut migrated = Vec::new();
    let mut canary_policies = Vec::new();
    for (key, ingress) in &selected {
        report.touch(key);
        let used = Used::of(ingress);
        let extras = annotations::convert(snapshot, key, ingress, &used, &mut report);
        if let Some(canary) = extras.canary.clone() {
            let part = lower(snapshot, key, ingress, &extras, None, &mut report);
            canary::attach_canary(key, part, &canary, &mut migrated, &mut report);
            canary_policies.extend(canary::canary_only(key, &extras, &mut report));
            // Its certificates are presented all the same.
            gateway::collect_tls(snapshot, key, ingress, &mut tls_hosts, &mut report);
            continue;
        }
        let mut part = lower(
            snapshot,
            key,
            ingress,
            &extras,
            Some(&mut served),
            &mut report,
        );
        part.extras = extras;
        assign_rewrites(&mut part);
        if let Some(default) = part.default_backend.take() {
            part.default_backend =
                take_default(key, default, &mut default_taken, &served, &mut report);
        }
        gateway::collect_tls(snapshot, key, ingress, &mut tls_hosts, &mut report);
        migrated.push(part);
    }
    checks::report_regex_ties(&migrated, &mut report);
    checks::report_shared_policies(&migrated, &mut report);
    checks::report_classes(snapshot, &selected, settings, &mut report);
    let mut documents = Vec::new();
    if !selected.is_empty() {
        documents.extend(gateway::documents(settings, &gateway, &tls_hosts));
    }
    let parent = routes::Parent {
        gateway: &gateway,
        tls_hosts: &tls_hosts,
        https_port: settings.https_port,
    };
    let mut names = BTreeSet::new();
    for part in &migrated {
        documents.extend(routes::documents(&parent, part, &mut names));
    }
    documents.extend(canary_policies);
    Migration { documents, report }
}

/// The Gateway's name and namespace: the flag, else the namespace all
/// Ingresses share, else `default`.
fn gateway_key(settings: &Settings, selected: &[(&ObjectKey, &Arc<Ingress>)]) -> ObjectKey {
    let namespace = settings.gateway_namespace.clone().unwrap_or_else(|| {
        let namespaces: BTreeSet<&str> = selected.iter().map(|(k, _)| &*k.namespace).collect();
        match namespaces.into_iter().collect::<Vec<_>>().as_slice() {
            [only] => (*only).to_string(),
            _ => "default".to_string(),
        }
    });
    ObjectKey::new(namespace, settings.gateway_name.clone())
}

/// The oldest Ingress's default backend is the only one served (as by the
/// Ingress translator), and only when no rule already takes every path.
fn take_default<'a>(
    key: &'a ObjectKey,
    default: PathRule,
    taken: &mut Option<&'a ObjectKey>,
    served: &BTreeSet<(Option<String>, PathKind, String)>,
    report: &mut Report,
) -> Option<PathRule> {
    if let Some(by) = taken {
        report.note(
            key,
            "defaultBackend",
            format!(
                "not migrated: the default backend of the older Ingress {by} is the one served"
            ),
        );
        return None;
    }
    *taken = Some(key);
    if served.contains(&(None, PathKind::PathPrefix, "/".to_string())) {
        report.note(
            key,
            "defaultBackend",
            "not migrated: a rule without host for Prefix / already takes every request",
        );
        return None;
    }
    Some(default)
}

/// `rewrite-target` with capture groups: a PathRewriteRegex per regular
/// expression rule, over that rule's whole path (as the Ingress does).
fn assign_rewrites(part: &mut Migrated<'_>) {
    let Some(substitution) = part.extras.rewrite_captures.clone() else {
        return;
    };
    let regex_rules = part
        .rules
        .iter_mut()
        .filter(|r| r.kind == PathKind::RegularExpression);
    for (n, rule) in regex_rules.enumerate() {
        let name = format!("{}-rewrite-{}", part.key.name, n + 1);
        part.extras.objects.push(serde_json::json!({
            "apiVersion": "gateway.coxswain-labs.dev/v1alpha1",
            "kind": "PathRewriteRegex",
            "metadata": {"name": name, "namespace": part.key.namespace},
            "spec": {"pattern": format!("^(?:{})$", rule.path), "substitution": substitution},
        }));
        rule.rewrite = Some(name);
    }
}

/// The Ingress's rules; `served` (`None` for a canary, whose rules join
/// others') records every match taken, so equal younger ones are left out.
fn lower<'a>(
    snapshot: &Snapshot,
    key: &'a ObjectKey,
    ingress: &'a Ingress,
    extras: &Extras,
    mut served: Option<&mut BTreeSet<(Option<String>, PathKind, String)>>,
    report: &mut Report,
) -> Migrated<'a> {
    let mut part = Migrated {
        key,
        rules: Vec::new(),
        default_backend: None,
        extras: Extras::default(),
        tls_hosts: Vec::new(),
    };
    let Some(spec) = ingress.spec.as_ref() else {
        return part;
    };
    for entry in spec.tls.iter().flatten() {
        match entry.hosts.as_deref() {
            None | Some([]) => part.tls_hosts.push(None),
            Some(hosts) => part.tls_hosts.extend(hosts.iter().cloned().map(Some)),
        }
    }
    for (r, rule) in spec.rules.iter().flatten().enumerate() {
        let host = match rule.host.as_deref() {
            None | Some("") => None,
            Some(host) => match Hostname::parse(host) {
                Ok(h) => {
                    if h.is_wildcard() {
                        report.lost(key, format!("rules[{r}].host"), wildcard_why(host));
                    }
                    Some(host.to_string())
                }
                Err(e) => {
                    report.note(
                        key,
                        format!("rules[{r}].host"),
                        format!("not migrated: host {host:?} is invalid ({e}); the Ingress does not serve it either"),
                    );
                    continue;
                }
            },
        };
        let paths = rule.http.as_ref().map(|h| h.paths.as_slice());
        for (p, path) in paths.unwrap_or_default().iter().enumerate() {
            let at = format!("rules[{r}].http.paths[{p}]");
            let (kind, value) = match path_match(&path.path_type, path.path.as_deref()) {
                Ok((PathKind::PathPrefix, value)) if extras.regex_paths => {
                    (PathKind::RegularExpression, format!("(?i:{value}).*"))
                }
                Ok(m) => m,
                Err(why) => {
                    report.note(
                        key,
                        at,
                        format!("not migrated: {why}; the Ingress does not serve it either"),
                    );
                    continue;
                }
            };
            if kind != PathKind::RegularExpression && !gateway_api_path(&value) {
                report.lost(
                    key,
                    &at,
                    format!("path {value:?} has characters Gateway API does not allow in a {kind:?} value: Coxswain serves it, an API server rejects the route"),
                );
            }
            let Some(target) = target(snapshot, key, &path.backend, &at, report) else {
                continue;
            };
            let taken = served
                .as_deref_mut()
                .is_some_and(|s| !s.insert((host.clone(), kind.clone(), value.clone())));
            if taken {
                report.note(
                    key,
                    at,
                    format!("not migrated: an older rule has the same host and {value:?} path, and the older one is what the Ingress serves"),
                );
                continue;
            }
            part.rules.push(PathRule {
                host: host.clone(),
                kind,
                path: value,
                target,
                at,
                canary: None,
                rewrite: None,
            });
        }
    }
    if let Some(default) = &spec.default_backend
        && let Some(target) = target(snapshot, key, default, "defaultBackend", report)
    {
        part.default_backend = Some(PathRule {
            host: None,
            kind: PathKind::PathPrefix,
            path: "/".to_string(),
            target,
            at: "defaultBackend".to_string(),
            canary: None,
            rewrite: None,
        });
    }
    part
}

/// The characters Gateway API allows in `Exact` and `PathPrefix` values.
fn gateway_api_path(path: &str) -> bool {
    path.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-/._~!$&'()*+,;=:@%".contains(c))
}

pub fn wildcard_why(host: &str) -> String {
    format!(
        "Ingress wildcard {host:?} matches exactly one label; Gateway API wildcards match any number, so deeper names (a.b{}) are served here too",
        host.trim_start_matches('*')
    )
}

/// The Ingress path as a Gateway API match. `ImplementationSpecific`
/// means `Prefix`, as the Ingress translator serves it.
pub fn path_match(path_type: &str, path: Option<&str>) -> Result<(PathKind, String), String> {
    let path = path.unwrap_or("/");
    if !path.starts_with('/') {
        return Err(format!("path {path:?} does not start with '/'"));
    }
    if path
        .chars()
        .any(|c| c.is_ascii_control() || c == ' ' || c == '?' || c == '#')
    {
        return Err(format!("path {path:?} has characters a path cannot have"));
    }
    match path_type {
        "Exact" => Ok((PathKind::Exact, path.to_string())),
        "Prefix" | "ImplementationSpecific" => Ok((PathKind::PathPrefix, path.to_string())),
        other => Err(format!(
            "pathType {other:?} is not Exact, Prefix or ImplementationSpecific"
        )),
    }
}
