//! The load-balancer stand-in's view of the cluster, as pure functions:
//! which Services it serves, what address each asks for, and which pods on
//! this node are their ready endpoints.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::ResourceExt;

use crate::netns;

/// A Service, by name and UID (a Service deleted and created again under
/// the same name is another Service).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceKey {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl ServiceKey {
    pub fn of(svc: &Service) -> Self {
        Self {
            namespace: svc.namespace().unwrap_or_default(),
            name: svc.name_any(),
            uid: svc.uid().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A ready pod on this node that traffic to a Service's address may go to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub ip: Ipv4Addr,
    /// The pod's network namespace (see `netns::names_for`).
    pub netns: String,
}

/// Services this stand-in serves: type LoadBalancer, not being deleted, and
/// no `loadBalancerClass` (a class names another implementation, as with a
/// cloud's default load balancer).
pub fn is_served(svc: &Service) -> bool {
    let Some(spec) = svc.spec.as_ref() else {
        return false;
    };
    svc.metadata.deletion_timestamp.is_none()
        && spec.type_.as_deref() == Some("LoadBalancer")
        && spec.load_balancer_class.is_none()
}

/// What `spec.loadBalancerIP` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    Any,
    Ip(Ipv4Addr),
    /// Set but not an IPv4 address.
    Unusable,
}

pub fn requested(svc: &Service) -> Requested {
    match svc
        .spec
        .as_ref()
        .and_then(|s| s.load_balancer_ip.as_deref())
        .map(str::trim)
    {
        None | Some("") => Requested::Any,
        Some(text) => text.parse().map_or(Requested::Unusable, Requested::Ip),
    }
}

/// The first IPv4 address of `status.loadBalancer.ingress`.
pub fn status_ip(svc: &Service) -> Option<Ipv4Addr> {
    svc.status
        .as_ref()?
        .load_balancer
        .as_ref()?
        .ingress
        .as_ref()?
        .iter()
        .find_map(|ingress| ingress.ip.as_deref()?.parse().ok())
}

/// Whether the Service's status carries exactly `ip` as its only ingress.
pub fn status_is(svc: &Service, ip: Option<Ipv4Addr>) -> bool {
    let ingress = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    match (ip, ingress) {
        (None, []) => true,
        (Some(ip), [only]) => {
            only.ip.as_deref() == Some(ip.to_string().as_str()) && only.hostname.is_none()
        }
        _ => false,
    }
}

fn is_ready(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    pod.metadata.deletion_timestamp.is_none()
        && status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.labels();
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The Service's ready endpoints among `pods` (this node's pods): same
/// namespace, every selector label, Ready, with an IPv4 pod IP. A Service
/// without a selector has none (its endpoints are someone else's).
pub fn endpoints<'a>(
    svc: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
    node: &str,
) -> Vec<Endpoint> {
    let Some(selector) = svc
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .filter(|s| !s.is_empty())
    else {
        return Vec::new();
    };
    let namespace = svc.namespace().unwrap_or_default();
    let mut out: Vec<Endpoint> = pods
        .into_iter()
        .filter(|pod| pod.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|pod| selects(selector, pod) && is_ready(pod))
        .filter_map(|pod| {
            let ip = pod.status.as_ref()?.pod_ip.as_deref()?.parse().ok()?;
            let uid = pod.uid()?;
            Some(Endpoint {
                ip,
                netns: netns::names_for(node, &uid).0,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
#[path = "lb_plan_tests.rs"]
mod tests;
