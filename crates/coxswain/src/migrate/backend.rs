//! An Ingress backend as a backendRef: a Service port by number, or by
//! name resolved through the Service in the input (a rule whose port
//! cannot be resolved keeps no backendRefs and answers 500, as the Ingress
//! does). Resource backends are not served by the Ingress, so not migrated.

use coxswain_api::k8s_openapi::api::networking::v1::IngressBackend;
use coxswain_api::{ObjectKey, Snapshot};

use super::convert::Target;
use super::report::Report;

/// The backendRef of an Ingress backend; `None` when the Ingress does not
/// serve that path at all (resource backends).
pub fn target(
    snapshot: &Snapshot,
    key: &ObjectKey,
    backend: &IngressBackend,
    at: &str,
    report: &mut Report,
) -> Option<Target> {
    if let Some(resource) = &backend.resource {
        report.note(
            key,
            at,
            format!(
                "not migrated: resource backend {} {:?}; the Ingress does not serve it either",
                resource.kind, resource.name
            ),
        );
        return None;
    }
    let Some(service) = &backend.service else {
        report.note(key, at, "not migrated: the backend names no Service");
        return None;
    };
    let name = service.name.clone();
    let port = service.port.as_ref();
    let object = snapshot
        .services
        .get(&ObjectKey::new(key.namespace.clone(), name.clone()));
    let ports = object
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.ports.as_deref())
        .unwrap_or_default();
    match (
        port.and_then(|p| p.number),
        port.and_then(|p| p.name.as_deref()),
    ) {
        (Some(number), _) => {
            if object.is_none() {
                report.note(
                    key,
                    at,
                    format!("Service {name} is not in the input; its backendRef is not checked"),
                );
            }
            Some(Target::Service { name, port: number })
        }
        (None, Some(port_name)) => {
            match ports.iter().find(|p| p.name.as_deref() == Some(port_name)) {
                Some(found) => Some(Target::Service {
                    name,
                    port: found.port,
                }),
                None => {
                    let why = if object.is_some() {
                        format!("Service {name} has no port named {port_name:?}")
                    } else {
                        format!(
                            "Service {name} is not in the input, so port {port_name:?} cannot be resolved to a number"
                        )
                    };
                    report.lost(
                        key,
                        at,
                        format!("{why}: the rule has no backendRefs and answers 500"),
                    );
                    Some(Target::Unresolved)
                }
            }
        }
        (None, None) => {
            report.lost(
                key,
                at,
                format!("the backend of Service {name} names no port: the rule has no backendRefs and answers 500"),
            );
            Some(Target::Unresolved)
        }
    }
}
