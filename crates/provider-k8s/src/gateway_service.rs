//! Default address mode: each Gateway is exposed by a LoadBalancer Service
//! `<gateway>-coxswain` selecting the proxy pods, and gets a
//! ServiceAccount of the same name (GEP-1867 infrastructure labels and
//! annotations go on both; reserved label keys are dropped). The Gateway's
//! status.addresses come from the Service's load balancer ingress. A
//! dedicated Gateway's objects of the same names are built in `pool`.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::gw::gateways::GatewayStatusAddresses;
use coxswain_api::{Gateway, ObjectKey, Service};
use coxswain_ir::{Config, Transport};
use k8s_openapi::api::core::v1::{ServiceAccount, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::labels::user_labels;

pub use crate::labels::{GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL};

pub fn resource_name(gateway: &str) -> String {
    format!("{gateway}-coxswain")
}

/// The Gateway as the controlling owner of what we create for it (the
/// garbage collector deletes them with it), or `None` for a Gateway
/// without name or uid (not yet stored).
pub fn owner_reference(gw: &Gateway) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "gateway.networking.k8s.io/v1".to_string(),
        kind: "Gateway".to_string(),
        name: gw.metadata.name.clone()?,
        uid: gw.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// Is `meta` controlled by this Gateway (the one we would have set)?
pub fn owned_by(meta: &ObjectMeta, gw: &Gateway) -> bool {
    let uid = gw.metadata.uid.as_deref();
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.kind == "Gateway" && Some(o.uid.as_str()) == uid)
}

/// Metadata shared by the Service and ServiceAccount of a Gateway served
/// by the shared proxies.
fn metadata(gw: &Gateway) -> Option<ObjectMeta> {
    let name = gw.metadata.name.clone()?;
    let infra = gw.spec.infrastructure.as_ref();
    let mut labels = user_labels(gw, None);
    let annotations = infra
        .and_then(|i| i.annotations.clone())
        .unwrap_or_default();
    labels.insert(GATEWAY_NAME_LABEL.to_string(), name.clone());
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    Some(ObjectMeta {
        name: Some(resource_name(&name)),
        namespace: gw.metadata.namespace.clone(),
        labels: Some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        owner_references: Some(vec![owner_reference(gw)?]),
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
    Some(Service {
        metadata: metadata(gw)?,
        spec: Some(ServiceSpec {
            type_: Some("LoadBalancer".to_string()),
            selector: Some(proxy_selector.clone()),
            ports: Some(service_ports(gw, served)),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// One port per distinct (protocol, port) of the Gateway's listeners and
/// of `served` (the ListenerSet listeners the IR serves for it).
pub fn service_ports(gw: &Gateway, served: &BTreeSet<(Transport, u16)>) -> Vec<ServicePort> {
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
        .collect()
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
        // Set by a pool's parameters; the API server defaults some when
        // unset, so only what we set is compared.
        && same_if_set(&live_spec.external_traffic_policy, &want_spec.external_traffic_policy)
        && same_if_set(&live_spec.load_balancer_class, &want_spec.load_balancer_class)
        && same_if_set(&live_spec.load_balancer_ip, &want_spec.load_balancer_ip)
        && same_if_set(&live_spec.external_ips, &want_spec.external_ips)
}

fn same_if_set<T: PartialEq>(live: &Option<T>, want: &Option<T>) -> bool {
    want.is_none() || live == want
}

#[cfg(test)]
#[path = "gateway_service_tests.rs"]
mod tests;
