//! One Ingress's path rules as HTTPRoutes: one per host (the rules
//! without host in one route without hostnames), rules in the Ingress's
//! order, at most 16 rules per route (the HTTPRoute limit), and the
//! default backend as a catch-all route of its own.

use std::collections::BTreeSet;

use coxswain_api::ObjectKey;
use serde_json::{Map, Value, json};

use super::convert::{Document, Migrated, PathKind, PathRule, Target};

/// HTTPRoute's `rules` maxItems.
const MAX_RULES: usize = 16;

/// What every route attaches to.
pub struct Parent<'a> {
    pub gateway: &'a ObjectKey,
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
    for host in hosts {
        let rules: Vec<&PathRule> = part
            .rules
            .iter()
            .filter(|r| r.host.as_deref() == host)
            .collect();
        let base = match host {
            None => part.key.name.clone(),
            Some(h) => format!("{}-{}", part.key.name, h.replace('*', "wildcard")),
        };
        for chunk in rules.chunks(MAX_RULES) {
            let name = unique(names, &part.key.namespace, &base);
            let rules = chunk.iter().map(|r| rule(r, part)).collect();
            out.push(Document {
                file: file.clone(),
                object: route(parent, part, &name, host, rules),
            });
        }
    }
    if let Some(default) = &part.default_backend {
        let name = unique(
            names,
            &part.key.namespace,
            &format!("{}-default-backend", part.key.name),
        );
        out.push(Document {
            file: file.clone(),
            object: route(parent, part, &name, None, vec![rule(default, part)]),
        });
    }
    out
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
    parent: &Parent<'_>,
    part: &Migrated<'_>,
    name: &str,
    host: Option<&str>,
    rules: Vec<Value>,
) -> Value {
    let mut spec = Map::new();
    spec.insert("parentRefs".to_string(), json!([parent.reference(None)]));
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

fn rule(path: &PathRule, part: &Migrated<'_>) -> Value {
    let kind = match path.kind {
        PathKind::Exact => "Exact",
        PathKind::PathPrefix => "PathPrefix",
    };
    let mut rule = Map::new();
    rule.insert(
        "matches".to_string(),
        json!([{"path": {"type": kind, "value": path.path}}]),
    );
    if !part.extras.filters.is_empty() {
        rule.insert(
            "filters".to_string(),
            Value::Array(part.extras.filters.clone()),
        );
    }
    let backends = match &path.target {
        Target::Service { name, port } => json!([{"name": name, "port": port}]),
        Target::Unresolved => json!([]),
    };
    rule.insert("backendRefs".to_string(), backends);
    if let Some(timeouts) = &part.extras.timeouts {
        rule.insert("timeouts".to_string(), timeouts.clone());
    }
    Value::Object(rule)
}
