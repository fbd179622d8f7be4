//! Clusters from EndpointSlices (`kubernetes.io/service-name`): ready
//! endpoints; when a Service has none (every pod is terminating, as at the
//! end of a rolling update), its terminating endpoints that still serve,
//! as kube-proxy does, rather than refusing every request. No ClusterIP
//! fallback: there is no kube-proxy behind us.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use coxswain_api::{EndpointSlice, Snapshot};
use coxswain_ir::{Cluster, Endpoint};

use crate::route::ClusterSpec;

const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// EndpointSlices by (namespace, service name).
pub struct SliceIndex<'a> {
    by_service: BTreeMap<(&'a str, &'a str), Vec<&'a EndpointSlice>>,
}

impl<'a> SliceIndex<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let mut by_service: BTreeMap<(&str, &str), Vec<&EndpointSlice>> = BTreeMap::new();
        for (key, slice) in &snapshot.endpoint_slices {
            let service = slice
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SERVICE_NAME_LABEL));
            if let Some(service) = service {
                by_service
                    .entry((&*key.namespace, service.as_str()))
                    .or_default()
                    .push(slice);
            }
        }
        SliceIndex { by_service }
    }

    pub fn cluster(&self, spec: &ClusterSpec) -> Cluster {
        let slices = self
            .by_service
            .get(&(spec.namespace.as_str(), spec.service.as_str()))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let all: Vec<(Endpoint, State)> = slices
            .iter()
            .flat_map(|slice| slice_endpoints(slice, spec))
            .collect();
        let ready = all.iter().any(|(_, s)| *s == State::Ready);
        let wanted = if ready {
            State::Ready
        } else {
            State::TerminatingServing
        };
        let mut endpoints: Vec<Endpoint> = all
            .into_iter()
            .filter(|(_, s)| *s == wanted)
            .map(|(e, _)| e)
            .collect();
        endpoints.sort();
        endpoints.dedup();
        Cluster {
            name: spec.name.clone(),
            protocol: spec.protocol,
            endpoints,
            tls: None,
            policy: None,
            retry_budget: None,
        }
    }
}

/// What an endpoint may be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ready,
    /// Going away but still answering: used only when nothing is ready.
    TerminatingServing,
    Unusable,
}

fn slice_endpoints(slice: &EndpointSlice, spec: &ClusterSpec) -> Vec<(Endpoint, State)> {
    if !matches!(slice.address_type.as_str(), "IPv4" | "IPv6") {
        return Vec::new();
    }
    let Some(port) = slice_port(slice, spec) else {
        return Vec::new();
    };
    slice
        .endpoints
        .iter()
        .map(|e| (e, state(e)))
        .filter(|(_, s)| *s != State::Unusable)
        .flat_map(|(e, s)| e.addresses.iter().map(move |a| (a, s)))
        .filter_map(|(a, s)| Some((a.parse::<IpAddr>().ok()?, s)))
        .map(|(ip, s)| {
            let endpoint = Endpoint {
                address: SocketAddr::new(ip, port),
            };
            (endpoint, s)
        })
        .collect()
}

/// The slice port whose name equals the Service port's name (both may be unnamed).
fn slice_port(slice: &EndpointSlice, spec: &ClusterSpec) -> Option<u16> {
    let want = spec.port_name.as_deref().unwrap_or("");
    match slice.ports.as_deref() {
        Some(ports) if !ports.is_empty() => ports
            .iter()
            .find(|p| p.name.as_deref().unwrap_or("") == want)
            .and_then(|p| p.port)
            .and_then(|p| u16::try_from(p).ok()),
        _ => spec.target_port.and_then(|p| u16::try_from(p).ok()),
    }
    .filter(|p| *p != 0)
}

/// Unset conditions mean ready (the API's defaults); `serving` is
/// readiness regardless of termination.
fn state(e: &coxswain_api::k8s_openapi::api::discovery::v1::Endpoint) -> State {
    let Some(c) = &e.conditions else {
        return State::Ready;
    };
    let serving = c.serving.or(c.ready).unwrap_or(true);
    match (c.terminating == Some(true), serving) {
        (false, true) => State::Ready,
        (true, true) => State::TerminatingServing,
        (_, false) => State::Unusable,
    }
}
