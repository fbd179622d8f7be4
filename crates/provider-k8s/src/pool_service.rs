//! A dedicated Gateway's Service `<gateway>-coxswain`: its type and
//! traffic settings from the parameters, selecting the pool's pods, with
//! the Gateway's requested `spec.addresses` (IPAddress) as the load
//! balancer IP (LoadBalancer: exactly one) or as external IPs (ClusterIP,
//! NodePort). The Gateway's status addresses come from it.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use coxswain_api::Gateway;
use coxswain_api::crds::{CoxswainGatewayParametersSpec, ServiceTypeOverride};
use coxswain_api::gw::gateways::GatewayStatusAddresses;
use coxswain_ir::Transport;
use coxswain_translate::AssignedAddresses;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};

use crate::gateway_service::{ingress_addresses, resource_name, service_ports};
use crate::labels::pool_labels;
use crate::pool::pool_metadata;

pub fn service_type(spec: &CoxswainGatewayParametersSpec) -> ServiceTypeOverride {
    spec.service_type
        .unwrap_or(ServiceTypeOverride::LoadBalancer)
}

/// The IPAddress values of `spec.addresses` (empty values ask for any
/// address: nothing to request).
pub fn requested_ips(gw: &Gateway) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = gw
        .spec
        .addresses
        .iter()
        .flatten()
        .filter(|a| a.r#type.as_deref().unwrap_or("IPAddress") == "IPAddress")
        .filter_map(|a| a.value.as_deref()?.parse().ok())
        .collect();
    ips.sort();
    ips.dedup();
    ips
}

pub fn desired_pool_service(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
    served: &BTreeSet<(Transport, u16)>,
) -> Option<Service> {
    let gateway = gw.metadata.name.as_deref()?;
    let mut metadata = pool_metadata(gw, spec, resource_name(gateway))?;
    let service = spec.service.as_ref();
    if let Some(extra) = service.map(|s| &s.annotations).filter(|a| !a.is_empty()) {
        let annotations = metadata.annotations.get_or_insert_default();
        annotations.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let kind = service_type(spec);
    let ips: Vec<String> = requested_ips(gw).iter().map(ToString::to_string).collect();
    let (load_balancer_ip, external_ips) = match (kind, ips.as_slice()) {
        (_, []) => (None, None),
        // More than one is refused (see `pool_bind`): none is requested.
        (ServiceTypeOverride::LoadBalancer, [one]) => (Some(one.clone()), None),
        (ServiceTypeOverride::LoadBalancer, _) => (None, None),
        (_, many) => (None, Some(many.to_vec())),
    };
    Some(Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(kind.as_str().to_string()),
            selector: Some(pool_labels(gateway)),
            ports: Some(service_ports(gw, served)),
            external_traffic_policy: service
                .and_then(|s| s.external_traffic_policy)
                .map(|p| p.as_str().to_string()),
            load_balancer_class: service.and_then(|s| s.load_balancer_class.clone()),
            load_balancer_ip,
            external_ips,
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// What a dedicated Gateway's listeners bind inside its pool's pods: the
/// wildcard address (its requested addresses belong to the Service), or
/// why the Service cannot take the addresses requested.
pub fn pool_bind(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
    default_address: IpAddr,
) -> AssignedAddresses {
    let requested = requested_ips(gw).len();
    if service_type(spec) == ServiceTypeOverride::LoadBalancer && requested > 1 {
        return Err(format!(
            "a LoadBalancer Service takes one requested address (its loadBalancerIP); {requested} are requested"
        ));
    }
    let any = match default_address {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    Ok(vec![any])
}

/// Where a pool's Service is reachable: its load balancer's addresses
/// (LoadBalancer), else its external IPs, else its cluster IPs.
pub fn pool_addresses(
    service: &Service,
    spec: &CoxswainGatewayParametersSpec,
) -> Vec<GatewayStatusAddresses> {
    if service_type(spec) == ServiceTypeOverride::LoadBalancer {
        return ingress_addresses(service);
    }
    let Some(svc) = service.spec.as_ref() else {
        return Vec::new();
    };
    let external = svc.external_ips.iter().flatten();
    let cluster = svc
        .cluster_ips
        .iter()
        .flatten()
        .chain(svc.cluster_ip.iter());
    let chosen: Vec<&String> = if svc.external_ips.as_ref().is_some_and(|e| !e.is_empty()) {
        external.collect()
    } else {
        cluster.collect()
    };
    let mut out: Vec<GatewayStatusAddresses> = Vec::new();
    for ip in chosen {
        if ip.is_empty() || ip == "None" || out.iter().any(|a| &a.value == ip) {
            continue;
        }
        out.push(GatewayStatusAddresses {
            r#type: Some("IPAddress".to_string()),
            value: ip.clone(),
        });
    }
    out
}

#[cfg(test)]
#[path = "pool_service_tests.rs"]
mod tests;
