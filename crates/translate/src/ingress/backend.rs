//! Ingress backends onto clusters: a Service port by number or by name
//! (resolved through the Service's ports). Resource backends are refused.

use coxswain_api::k8s_openapi::api::networking::v1::IngressBackend;
use coxswain_api::{ObjectKey, Snapshot};
use coxswain_ir::RouteKind;

use super::problem::IngressProblem;
use crate::route::ClusterSpec;
use crate::route::backends::cluster_spec;

/// `Err`: the path is not served at all. `Ok(Err(why))`: it is served, but
/// answers 500 (the Service or port does not resolve).
pub type Resolved = Result<Result<ClusterSpec, String>, IngressProblem>;

pub fn resolve(
    snapshot: &Snapshot,
    namespace: &str,
    backend: &IngressBackend,
    at: &str,
) -> Resolved {
    if let Some(resource) = &backend.resource {
        let group = resource.api_group.as_deref().unwrap_or("");
        return Err(IngressProblem::ResourceBackend {
            at: at.to_string(),
            kind: format!("{group}/{}", resource.kind),
            name: resource.name.clone(),
        });
    }
    let Some(service) = &backend.service else {
        return Err(IngressProblem::NoBackend { at: at.to_string() });
    };
    let name = service.name.as_str();
    let Some(object) = snapshot.services.get(&ObjectKey::new(namespace, name)) else {
        return Ok(Err(format!("Service {namespace}/{name} not found")));
    };
    let ports = object
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_deref())
        .unwrap_or_default();
    let wanted = service.port.as_ref();
    let found = match (
        wanted.and_then(|p| p.number),
        wanted.and_then(|p| p.name.as_deref()),
    ) {
        (Some(number), _) => ports.iter().find(|p| p.port == number),
        (None, Some(port_name)) => ports.iter().find(|p| p.name.as_deref() == Some(port_name)),
        (None, None) => {
            return Ok(Err(format!(
                "the backend of Service {namespace}/{name} names no port"
            )));
        }
    };
    let Some(port) = found else {
        let shown = wanted
            .and_then(|p| p.name.clone().or(p.number.map(|n| n.to_string())))
            .unwrap_or_default();
        return Ok(Err(format!(
            "Service {namespace}/{name} has no port {shown}"
        )));
    };
    Ok(cluster_spec(RouteKind::Ingress, namespace, name, port).map_err(|(_, why)| why))
}
