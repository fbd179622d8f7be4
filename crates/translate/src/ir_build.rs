//! Assembles the IR: sockets from served listeners, routes in spec order,
//! clusters for every referenced Service port.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::{EndpointSlice, ObjectKey, Snapshot, same_objects};
use coxswain_ir::{
    Cluster, Config, GatewayListener, HostSpecificity, IR_VERSION, Listener, ListenerProtocol,
};

use crate::endpoints::SliceIndex;
use crate::gateway::GatewayModel;
use crate::route::{ClusterSpec, ListenerRoutes};

pub fn build_config(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    mut routes: ListenerRoutes,
    cluster_specs: &BTreeMap<String, ClusterSpec>,
    memo: &mut Option<ClusterMemo>,
) -> Config {
    let mut sockets: BTreeMap<(IpAddr, u16), (ListenerProtocol, Vec<GatewayListener>)> =
        BTreeMap::new();
    for (key, gw) in gateways {
        let Ok(addresses) = &gw.addresses else {
            continue;
        };
        for (idx, l) in gw.listeners.iter().enumerate() {
            if !gw.listener_served(l) {
                continue;
            }
            let protocol = if l.is_https() {
                ListenerProtocol::Https
            } else {
                ListenerProtocol::Http
            };
            let certificates = match &l.tls {
                Some(Ok(certs)) => certs.clone(),
                _ => Vec::new(),
            };
            let mut attached = routes
                .get_mut(key)
                .and_then(|m| m.remove(&idx))
                .unwrap_or_default();
            attached.sort_by_key(|a| a.order);
            let mut ir_routes: Vec<_> = attached.into_iter().map(|a| a.route).collect();
            for (i, address) in addresses.iter().enumerate() {
                // Every address but the last gets a copy; the last takes the original.
                let routes = if i + 1 == addresses.len() {
                    std::mem::take(&mut ir_routes)
                } else {
                    ir_routes.clone()
                };
                // Protocols on one port never mix within a Gateway
                // (ProtocolConflict); across Gateways the first one wins.
                sockets
                    .entry((*address, l.port))
                    .or_insert_with(|| (protocol, Vec::new()))
                    .1
                    .push(GatewayListener {
                        gateway: key.to_string(),
                        name: l.name.clone(),
                        hostname: l.hostname.clone(),
                        routes,
                        certificates: certificates.clone(),
                    });
            }
        }
    }

    let listeners: Vec<Listener> = sockets
        .into_iter()
        .map(|((address, port), (protocol, mut gateway_listeners))| {
            gateway_listeners.sort_by(|a, b| {
                HostSpecificity::of(a.hostname.as_ref())
                    .cmp(&HostSpecificity::of(b.hostname.as_ref()))
                    .then_with(|| a.hostname.cmp(&b.hostname))
                    .then_with(|| a.gateway.cmp(&b.gateway))
                    .then_with(|| a.name.cmp(&b.name))
            });
            Listener {
                address,
                port,
                protocol,
                gateway_listeners,
            }
        })
        .collect();

    // Specs come only from rules attached to served listeners, so every one
    // of them is referenced by the IR; the map is already sorted by name.
    let clusters = clusters(snapshot, cluster_specs, memo);

    Config {
        ir_version: IR_VERSION,
        listeners,
        clusters,
    }
}

/// The clusters of the last run and what they were built from.
pub struct ClusterMemo {
    slices: BTreeMap<ObjectKey, Arc<EndpointSlice>>,
    specs: BTreeMap<String, ClusterSpec>,
    clusters: Vec<Cluster>,
}

/// Clusters for `specs`, reused from `memo` when neither the specs nor the
/// EndpointSlices changed.
fn clusters(
    snapshot: &Snapshot,
    specs: &BTreeMap<String, ClusterSpec>,
    memo: &mut Option<ClusterMemo>,
) -> Vec<Cluster> {
    if let Some(m) = memo.as_ref()
        && same_objects(&m.slices, &snapshot.endpoint_slices)
        && m.specs == *specs
    {
        return m.clusters.clone();
    }
    let slices = SliceIndex::new(snapshot);
    let clusters: Vec<Cluster> = specs.values().map(|spec| slices.cluster(spec)).collect();
    *memo = Some(ClusterMemo {
        slices: snapshot.endpoint_slices.clone(),
        specs: specs.clone(),
        clusters: clusters.clone(),
    });
    clusters
}
