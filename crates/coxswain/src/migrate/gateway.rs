//! The GatewayClass and the one Gateway every migrated route attaches to:
//! an HTTP listener for every host, and an HTTPS listener per Ingress
//! `tls` host presenting the same Secret (a ReferenceGrant lets the
//! Gateway read Secrets in other namespaces).

use std::collections::BTreeSet;

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::Hostname;
use serde_json::{Value, json};

use super::convert::{Document, Settings, wildcard_why};
use super::report::Report;

pub const GATEWAY_FILE: &str = "gateway";
pub const HTTP_LISTENER: &str = "http";

/// One HTTPS listener: a `tls` host (none: every other name) and the
/// Secret it presents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsHost {
    pub host: Option<String>,
    pub secret: ObjectKey,
}

impl TlsHost {
    pub fn listener_name(&self) -> String {
        match &self.host {
            None => "https".to_string(),
            Some(host) => format!(
                "https-{}",
                host.to_ascii_lowercase().replace('*', "wildcard")
            ),
        }
    }
}

/// Adds the `tls` hosts of one Ingress; a host an older Ingress already
/// presents a certificate for keeps that one, as the Ingress translator does.
pub fn collect_tls(
    snapshot: &Snapshot,
    key: &ObjectKey,
    ingress: &Ingress,
    hosts: &mut Vec<TlsHost>,
    report: &mut Report,
) {
    let entries = ingress.spec.as_ref().and_then(|s| s.tls.as_deref());
    for (t, entry) in entries.unwrap_or_default().iter().enumerate() {
        let Some(secret_name) = entry.secret_name.as_deref().filter(|s| !s.is_empty()) else {
            report.note(
                key,
                format!("tls[{t}]"),
                "not migrated: no secretName; the Ingress presents nothing for it either",
            );
            continue;
        };
        let secret = ObjectKey::new(key.namespace.clone(), secret_name);
        if !snapshot.secrets.contains_key(&secret) {
            report.note(
                key,
                format!("tls[{t}].secretName"),
                format!("Secret {secret} is not in the input; the certificateRef is not checked"),
            );
        }
        let named: Vec<Option<String>> = match entry.hosts.as_deref() {
            None | Some([]) => vec![None],
            Some(list) => list.iter().cloned().map(Some).collect(),
        };
        for (h, host) in named.into_iter().enumerate() {
            let at = format!("tls[{t}].hosts[{h}]");
            if let Some(name) = &host {
                match Hostname::parse(name) {
                    Ok(parsed) if parsed.is_wildcard() => report.lost(key, &at, wildcard_why(name)),
                    Ok(_) => {}
                    Err(e) => {
                        report.note(
                            key,
                            at,
                            format!("not migrated: host {name:?} is invalid ({e})"),
                        );
                        continue;
                    }
                }
            }
            match hosts.iter().find(|existing| existing.host == host) {
                Some(existing) if existing.secret != secret => report.note(
                    key,
                    at,
                    format!(
                        "not migrated: an older Ingress presents Secret {} for this host, and that is what the Ingress serves",
                        existing.secret
                    ),
                ),
                Some(_) => {}
                None => hosts.push(TlsHost {
                    host,
                    secret: secret.clone(),
                }),
            }
        }
    }
}

/// GatewayClass, Gateway and any ReferenceGrants, in that order.
pub fn documents(settings: &Settings, gateway: &ObjectKey, tls: &[TlsHost]) -> Vec<Document> {
    let mut listeners = vec![json!({
        "name": HTTP_LISTENER,
        "protocol": "HTTP",
        "port": settings.http_port,
        "allowedRoutes": {"namespaces": {"from": "All"}},
    })];
    for host in tls {
        let mut listener = json!({
            "name": host.listener_name(),
            "protocol": "HTTPS",
            "port": settings.https_port,
            "tls": {
                "mode": "Terminate",
                "certificateRefs": [{
                    "group": "",
                    "kind": "Secret",
                    "name": host.secret.name,
                    "namespace": host.secret.namespace,
                }],
            },
            "allowedRoutes": {"namespaces": {"from": "All"}},
        });
        if let (Some(name), Some(map)) = (&host.host, listener.as_object_mut()) {
            map.insert("hostname".to_string(), Value::String(name.clone()));
        }
        listeners.push(listener);
    }
    let mut out = vec![
        document(json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": settings.gateway_class},
            "spec": {"controllerName": settings.controller_name},
        })),
        document(json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": gateway.name, "namespace": gateway.namespace},
            "spec": {"gatewayClassName": settings.gateway_class, "listeners": listeners},
        })),
    ];
    let foreign: BTreeSet<&str> = tls
        .iter()
        .map(|h| &*h.secret.namespace)
        .filter(|ns| *ns != &*gateway.namespace)
        .collect();
    for namespace in foreign {
        out.push(document(json!({
            "apiVersion": "gateway.networking.k8s.io/v1beta1",
            "kind": "ReferenceGrant",
            "metadata": {"name": format!("{}-certificates", gateway.name), "namespace": namespace},
            "spec": {
                "from": [{
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "namespace": gateway.namespace,
                }],
                "to": [{"group": "", "kind": "Secret"}],
            },
        })));
    }
    out
}

fn document(object: Value) -> Document {
    Document {
        file: GATEWAY_FILE.to_string(),
        object,
    }
}
