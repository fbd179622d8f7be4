//! What we say about each Ingress of ours: `status.loadBalancer` (where it
//! is served) and the problems found (Ingress status has no conditions).

use std::collections::BTreeMap;
use std::net::IpAddr;

use coxswain_api::ObjectKey;
use coxswain_api::k8s_openapi::api::networking::v1::{
    IngressLoadBalancerIngress, IngressLoadBalancerStatus, IngressPortStatus, IngressStatus,
};

use super::{IngressModel, IngressOptions, IngressProblem};

#[derive(Clone, Debug, PartialEq)]
pub struct IngressOutcome {
    pub status: IngressStatus,
    pub problems: Vec<IngressProblem>,
}

/// Every Ingress of ours is reachable at the same address: the plain HTTP
/// port, and the HTTPS port when some Ingress presents a certificate.
pub fn outcomes(
    model: &mut IngressModel,
    options: &IngressOptions,
    bind_address: IpAddr,
) -> BTreeMap<ObjectKey, IngressOutcome> {
    let mut ports = vec![options.http_port];
    if !model.certificates.is_empty() {
        ports.push(options.https_port);
    }
    let address = options.status_address.unwrap_or(bind_address);
    let status = IngressStatus {
        load_balancer: Some(IngressLoadBalancerStatus {
            ingress: Some(vec![IngressLoadBalancerIngress {
                ip: Some(address.to_string()),
                hostname: None,
                ports: Some(
                    ports
                        .into_iter()
                        .map(|port| IngressPortStatus {
                            port: i32::from(port),
                            protocol: "TCP".to_string(),
                            error: None,
                        })
                        .collect(),
                ),
            }]),
        }),
    };
    model
        .ours
        .iter()
        .map(|key| {
            let problems = model.problems.remove(key).unwrap_or_default();
            let outcome = IngressOutcome {
                status: status.clone(),
                problems,
            };
            (key.clone(), outcome)
        })
        .collect()
}
