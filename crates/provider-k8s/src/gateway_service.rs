//! Default address mode: each Gateway is exposed by a LoadBalancer Service
//! `<gateway>-coxswain` selecting the proxy pods, and gets a
//! ServiceAccount of the same name (GEP-1867 infrastructure labels and
//! annotations go on both). The Gateway's status.addresses come from the
//! Service's load balancer ingress.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::gw::gateways::GatewayStatusAddresses;
use coxswain_api::{Gateway, ObjectKey, Service};
use coxswain_ir::{Config, Transport};
use k8s_openapi::api::core::v1::{ServiceAccount, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "coxswain";

pub fn resource_name(gateway: &str) -> String {
    format!("{gateway}-coxswain")
}

/// Metadata shared by the Service and ServiceAccount of a Gateway, or
/// `None` for a Gateway without name or uid (not yet stored).
fn metadata(gw: &Gateway) -> Option<ObjectMeta> {
    let name = gw.metadata.name.clone()?;
    let uid = gw.metadata.uid.clone()?;
    let infra = gw.spec.infrastructure.as_ref();
    let mut labels = infra.and_then(|i| i.labels.clone()).unwrap_or_default();
    let annotations = infra
        .and_then(|i| i.annotations.clone())
        .unwrap_or_default();
    // Reserved keys are ours: infrastructure labels cannot override them.
    labels.insert(GATEWAY_NAME_LABEL.to_string(), name.clone());
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    Some(ObjectMeta {
        name: Some(resource_name(&name)),
        namespace: gw.metadata.namespace.clone(),
        labels: Some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        owner_references: Some(vec![OwnerReference {
            api_version: "gateway.networking.k8s.io/v1".to_string(),
            kind: "Gateway".to_string(),
            name,
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]),
        ..ObjectMeta::default()
    })
}

/// The Service exposing a Gateway: one port per distinct (protocol, port)
/// of its listeners and of the ListenerSet listeners it serves (`served`,
/// from the IR), UDP for UDP listeners and TCP for the rest.
pub fn desired_service(
    gw: &Gateway,
    proxy_selector: &BTreeMap<String, String>,
    served: &BTreeSet<(Transport, u16)>,
) -> Option<Service> {
    let own = gw.spec.listeners.iter().filter_map(|l| {
        let port = u16::try_from(l.port).ok().filter(|p| *p != 0)?;
        let transport = if l.protocol == "UDP" {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        Some((transport, port))
    });
    let ports: BTreeSet<(Transport, u16)> = own.chain(served.iter().copied()).collect();
    Some(Service {
        metadata: metadata(gw)?,
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".to_string()),
            selector: Some(proxy_selector.clone()),
            ports: Some(
                ports
                    .into_iter()
                    .map(|(transport, port)| {
                        let (name, protocol) = match transport {
                            Transport::Tcp => (format!("port-{port}"), "TCP"),
                            Transport::Udp => (format!("udp-{port}"), "UDP"),
                        };
                        ServicePort {
                            name: Some(name),
                            port: i32::from(port),
                            target_port: Some(IntOrString::Int(i32::from(port))),
                            protocol: Some(protocol.to_string()),
                            ..ServicePort::default()
                        }
                    })
                    .collect(),
            ),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// The (transport, port) of every socket in `ir` serving a listener of the
/// Gateway `key` (its own or a ListenerSet's).
pub fn served_ports(ir: &Config, key: &ObjectKey) -> BTreeSet<(Transport, u16)> {
    let gateway = key.to_string();
    ir.sockets
        .iter()
        .filter(|s| s.listeners.iter().any(|l| l.gateway == gateway))
        .map(|s| (s.transport, s.port))
        .collect()
}

pub fn desired_service_account(gw: &Gateway) -> Option<ServiceAccount> {
    Some(ServiceAccount {
        metadata: metadata(gw)?,
        ..ServiceAccount::default()
    })
}

/// Gateway status addresses from a Service's load balancer ingress.
pub fn ingress_addresses(service: &Service) -> Vec<GatewayStatusAddresses> {
    let ingress = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref());
    let mut out = Vec::new();
    for entry in ingress.into_iter().flatten() {
        if let Some(ip) = entry.ip.as_ref().filter(|ip| !ip.is_empty()) {
            out.push(GatewayStatusAddresses {
                r#type: Some("IPAddress".to_string()),
                value: ip.clone(),
            });
        } else if let Some(host) = entry.hostname.as_ref().filter(|h| !h.is_empty()) {
            out.push(GatewayStatusAddresses {
                r#type: Some("Hostname".to_string()),
                value: host.clone(),
            });
        }
    }
    out
}

/// Does the live Service already carry everything we would apply?
pub fn service_up_to_date(live: &Service, desired: &Service) -> bool {
    let contains = |live: Option<&BTreeMap<String, String>>,
                    want: Option<&BTreeMap<String, String>>| {
        want.into_iter()
            .flatten()
            .all(|(k, v)| live.and_then(|l| l.get(k)) == Some(v))
    };
    let (Some(live_spec), Some(want_spec)) = (&live.spec, &desired.spec) else {
        return false;
    };
    let port_set = |spec: &ServiceSpec| -> Vec<(Option<String>, i32, Option<IntOrString>)> {
        spec.ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone(), p.port, p.target_port.clone()))
            .collect()
    };
    contains(
        live.metadata.labels.as_ref(),
        desired.metadata.labels.as_ref(),
    ) && contains(
        live.metadata.annotations.as_ref(),
        desired.metadata.annotations.as_ref(),
    ) && live.metadata.owner_references == desired.metadata.owner_references
        && live_spec.type_ == want_spec.type_
        && live_spec.selector == want_spec.selector
        && port_set(live_spec) == port_set(want_spec)
}

#[cfg(test)]
#[path = "gateway_service_tests.rs"]
mod tests;
