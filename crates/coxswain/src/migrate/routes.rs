//! One Ingress's path rules as HTTPRoutes: one per host (the rules
//! without host in one route without hostnames), rules in the Ingress's
//! order, at most 16 rules per route (the HTTPRoute limit), and the
//! default backend as a catch-all route of its own. With ssl-redirect the
//! host's route serves only its HTTPS listeners and a twin on the HTTP
//! listener redirects.

use std::collections::BTreeSet;

use coxswain_api::ObjectKey;
use coxswain_ir::Hostname;
use serde_json::{Map, Value, json};

use super::annotations::Redirect;
use super::canary::CanaryBackend;
use super::convert::{Document, Migrated, PathKind, PathRule, Target};
use super::gateway::{HTTP_LISTENER, TlsHost};

/// HTTPRoute's `rules` maxItems.
const MAX_RULES: usize = 16;

/// What every route attaches to.
pub struct Parent<'a> {
    pub gateway: &'a ObjectKey,
    pub tls_hosts: &'a [TlsHost],
    pub https_port: u16,
}

impl Parent<'_> {
    /// A parentRef to the Gateway, to one listener when `section` is set.
    pub fn reference(&self, section: Option<&str>) -> Value {
        let mut reference = json!({
            "name": self.gateway.name,
            "namespace": self.gateway.namespace,
        });
        if let (Some(section), Some(map)) = (section, reference.as_object_mut()) {
            map.insert(
                "sectionName".to_string(),
                Value::String(section.to_string()),
            );
        }
        reference
    }

    /// The HTTPS listeners a route for `host` attaches to.
    fn https_listeners(&self, host: Option<&str>) -> Vec<String> {
        let host = host.and_then(|h| Hostname::parse(h).ok());
        self.tls_hosts
            .iter()
            .filter(|t| {
                let listener = t.host.as_deref().and_then(|h| Hostname::parse(h).ok());
                match (listener, &host) {
                    (None, _) | (_, None) => true,
                    (Some(l), Some(h)) => Hostname::intersect(&l, h).is_some(),
                }
            })
            .map(TlsHost::listener_name)
            .collect()
    }
}

/// Is plain HTTP to `host` redirected? With ssl-redirect, when the
/// Ingress has TLS for that host (or a `tls` entry for every host).
fn redirects(part: &Migrated<'_>, host: Option<&str>) -> bool {
    match part.extras.redirect {
        None => false,
        Some(Redirect::Every) => true,
        Some(Redirect::TlsHosts) => part
            .tls_hosts
            .iter()
            .any(|t| t.is_none() || (host.is_some() && t.as_deref() == host)),
    }
}

/// The HTTPRoutes (and the objects their filters refer to) of one Ingress.
pub fn documents(
    parent: &Parent<'_>,
    part: &Migrated<'_>,
    names: &mut BTreeSet<ObjectKey>,
) -> Vec<Document> {
    let file = format!("{}-{}", part.key.namespace, part.key.name);
    let mut out: Vec<Document> = part
        .extras
        .objects
        .iter()
        .map(|object| Document {
            file: file.clone(),
            object: object.clone(),
        })
        .collect();
    let mut hosts: Vec<Option<&str>> = Vec::new();
    for rule in &part.rules {
        if !hosts.contains(&rule.host.as_deref()) {
            hosts.push(rule.host.as_deref());
        }
    }
    let mut push = |name: &str, host: Option<&str>, parents: Vec<Value>, rules: Vec<Value>| {
        let name = unique(names, &part.key.namespace, name);
        out.push(Document {
            file: file.clone(),
            object: route(part, &name, host, parents, rules),
        });
    };
    for host in hosts {
        let rules: Vec<&PathRule> = part
            .rules
            .iter()
            .filter(|r| r.host.as_deref() == host)
            .collect();
        let base = match host {
            None => part.key.name.clone(),
            Some(h) => format!("{}-{}", part.key.name, h.replace('*', "wildcard")).into(),
        };
        for chunk in rules.chunks(MAX_RULES) {
            serve(&mut push, parent, part, &base, host, chunk);
        }
    }
    if let Some(default) = &part.default_backend {
        let base = format!("{}-default-backend", part.key.name);
        serve(&mut push, parent, part, &base, None, &[default]);
    }
    out
}

/// The route of `rules`, and with ssl-redirect its twin on the HTTP
/// listener (the route itself then attaches to the HTTPS listeners only).
fn serve(
    push: &mut impl FnMut(&str, Option<&str>, Vec<Value>, Vec<Value>),
    parent: &Parent<'_>,
    part: &Migrated<'_>,
    base: &str,
    host: Option<&str>,
    rules: &[&PathRule],
) {
    let served: Vec<Value> = rules.iter().flat_map(|r| rules_of(r, part)).collect();
    if !redirects(part, host) {
        push(base, host, vec![parent.reference(None)], served);
        return;
    }
    let https: Vec<Value> = parent
        .https_listeners(host)
        .iter()
        .map(|l| parent.reference(Some(l)))
        .collect();
    if !https.is_empty() {
        push(base, host, https, served);
    }
    let redirects = rules
        .iter()
        .map(|r| redirect_rule(r, parent.https_port))
        .collect();
    push(
        &format!("{base}-ssl-redirect"),
        host,
        vec![parent.reference(Some(HTTP_LISTENER))],
        redirects,
    );
}

/// `base`, or `base-2`, `base-3`... when a route of that name exists.
fn unique(names: &mut BTreeSet<ObjectKey>, namespace: &str, base: &str) -> String {
    let mut name = base.to_ascii_lowercase();
    let mut n = 2;
    while !names.insert(ObjectKey::new(namespace, name.clone())) {
        name = format!("{}-{n}", base.to_ascii_lowercase());
        n += 1;
    }
    name
}

fn route(
    part: &Migrated<'_>,
    name: &str,
    host: Option<&str>,
    parents: Vec<Value>,
    rules: Vec<Value>,
) -> Value {
    let mut spec = Map::new();
    spec.insert("parentRefs".to_string(), Value::Array(parents));
    if let Some(host) = host {
        spec.insert("hostnames".to_string(), json!([host]));
    }
    spec.insert("rules".to_string(), Value::Array(rules));
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": name,
            "namespace": part.key.namespace,
            "annotations": {"coxswain-labs.dev/migrated-from": format!("Ingress {}", part.key)},
        },
        "spec": spec,
    })
}

fn path_match(path: &PathRule) -> Value {
    let kind = match path.kind {
        PathKind::Exact => "Exact",
        PathKind::PathPrefix => "PathPrefix",
        PathKind::RegularExpression => "RegularExpression",
    };
    json!({"type": kind, "value": path.path})
}

fn backend_ref(target: &Target, weight: Option<u32>) -> Option<Value> {
    let Target::Service { name, port } = target else {
        return None;
    };
    let mut reference = json!({"name": name, "port": port});
    if let (Some(weight), Some(map)) = (weight, reference.as_object_mut()) {
        map.insert("weight".to_string(), json!(weight));
    }
    Some(reference)
}

/// The rule for one path, preceded by a rule per canary header or cookie
/// (a header match beats none, and the header goes before the cookie, as
/// in ingress-nginx).
fn rules_of(path: &PathRule, part: &Migrated<'_>) -> Vec<Value> {
    let mut out = Vec::new();
    let backends: Vec<Value> = match &path.canary {
        None => backend_ref(&path.target, None).into_iter().collect(),
        Some(c) => {
            out.extend(canary_rules(path, c, part));
            let main = c.canary.weight_total.saturating_sub(c.canary.weight);
            [
                backend_ref(&path.target, Some(main)),
                backend_ref(&c.target, Some(c.canary.weight)),
            ]
            .into_iter()
            .flatten()
            .collect()
        }
    };
    out.push(rule(
        json!([{"path": path_match(path)}]),
        part,
        path,
        backends,
    ));
    out
}

fn canary_rules(path: &PathRule, canary: &CanaryBackend, part: &Migrated<'_>) -> Vec<Value> {
    let main = || {
        backend_ref(&path.target, None)
            .into_iter()
            .collect::<Vec<_>>()
    };
    let to_canary = || {
        backend_ref(&canary.target, None)
            .into_iter()
            .collect::<Vec<_>>()
    };
    let matching = |header: Value| json!([{"path": path_match(path), "headers": [header]}]);
    let mut out = Vec::new();
    if let Some(header) = &canary.canary.header {
        match (&header.value, &header.pattern) {
            (Some(value), _) => out.push(rule(
                matching(json!({"name": header.name, "value": value})),
                part,
                path,
                to_canary(),
            )),
            (None, Some(pattern)) => out.push(rule(
                matching(
                    json!({"type": "RegularExpression", "name": header.name, "value": pattern}),
                ),
                part,
                path,
                to_canary(),
            )),
            (None, None) => {
                out.push(rule(
                    matching(json!({"name": header.name, "value": "always"})),
                    part,
                    path,
                    to_canary(),
                ));
                // `never` only matters when the canary also takes a share.
                if canary.canary.weight > 0 {
                    out.push(rule(
                        matching(json!({"name": header.name, "value": "never"})),
                        part,
                        path,
                        main(),
                    ));
                }
            }
        }
    }
    if let Some(cookie) = &canary.canary.cookie {
        let mut choices = vec![("always", to_canary())];
        if canary.canary.weight > 0 {
            choices.push(("never", main()));
        }
        for (value, backends) in choices {
            let pattern = format!("(^|;\\s*){}={value}(;|$)", regex_escape(cookie));
            out.push(rule(
                matching(json!({"type": "RegularExpression", "name": "cookie", "value": pattern})),
                part,
                path,
                backends,
            ));
        }
    }
    out
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

fn rule(matches: Value, part: &Migrated<'_>, path: &PathRule, backends: Vec<Value>) -> Value {
    let mut rule = Map::new();
    rule.insert("matches".to_string(), matches);
    // Fail closed: no filter, no backend, so every request answers 500.
    if part.extras.fail_closed {
        rule.insert("backendRefs".to_string(), json!([]));
        return Value::Object(rule);
    }
    let mut filters = part.extras.filters.clone();
    if let Some(name) = &path.rewrite {
        filters.push(json!({"type": "ExtensionRef", "extensionRef": {
            "group": "gateway.coxswain-labs.dev", "kind": "PathRewriteRegex", "name": name,
        }}));
    }
    if !filters.is_empty() {
        rule.insert("filters".to_string(), Value::Array(filters));
    }
    rule.insert("backendRefs".to_string(), Value::Array(backends));
    if let Some(timeouts) = &part.extras.timeouts {
        rule.insert("timeouts".to_string(), timeouts.clone());
    }
    Value::Object(rule)
}

/// The HTTP listener's twin of a rule: the same match, redirected to HTTPS.
/// The port is always written, as the Ingress lowering does (the proxy
/// leaves a well-known port out of `Location`).
fn redirect_rule(path: &PathRule, https_port: u16) -> Value {
    let redirect = json!({"scheme": "https", "statusCode": Redirect::STATUS, "port": https_port});
    json!({
        "matches": [{"path": path_match(path)}],
        "filters": [{"type": "RequestRedirect", "requestRedirect": redirect}],
    })
}
