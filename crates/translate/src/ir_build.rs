//! Assembles the IR: sockets from served listeners, routes in spec order,
//! clusters for every referenced Service port.

use std::collections::BTreeMap;
use std::net::IpAddr;

use coxswain_api::{ObjectKey, Snapshot};
use coxswain_ir::{
    BackendTarget, Config, GatewayListener, HostSpecificity, IR_VERSION, Listener, ListenerProtocol,
};

use crate::endpoints::SliceIndex;
use crate::gateway::GatewayModel;
use crate::route::{AttachedRoute, ClusterSpec};

pub fn build_config(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    mut routes: BTreeMap<(ObjectKey, usize), Vec<AttachedRoute>>,
    cluster_specs: &BTreeMap<String, ClusterSpec>,
) -> Config {
    let mut sockets: BTreeMap<(IpAddr, u16), Vec<GatewayListener>> = BTreeMap::new();
    for (key, gw) in gateways {
        let Ok(addresses) = &gw.addresses else {
            continue;
        };
        for (idx, l) in gw.listeners.iter().enumerate() {
            if !gw.listener_routable(l) {
                continue;
            }
            let mut attached = routes.remove(&(key.clone(), idx)).unwrap_or_default();
            attached.sort_by(|a, b| a.order.cmp(&b.order));
            let ir_routes: Vec<_> = attached.into_iter().map(|a| a.route).collect();
            for address in addresses {
                sockets
                    .entry((*address, l.port))
                    .or_default()
                    .push(GatewayListener {
                        gateway: key.to_string(),
                        name: l.name.clone(),
                        hostname: l.hostname.clone(),
                        routes: ir_routes.clone(),
                    });
            }
        }
    }

    let listeners: Vec<Listener> = sockets
        .into_iter()
        .map(|((address, port), mut gateway_listeners)| {
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
                protocol: ListenerProtocol::Http,
                gateway_listeners,
            }
        })
        .collect();

    let mut referenced: Vec<&str> = listeners
        .iter()
        .flat_map(|l| &l.gateway_listeners)
        .flat_map(|g| &g.routes)
        .flat_map(|r| &r.backends)
        .filter_map(|b| match &b.target {
            BackendTarget::Cluster(name) => Some(name.as_str()),
            BackendTarget::Invalid { .. } => None,
        })
        .collect();
    referenced.sort_unstable();
    referenced.dedup();
    let slices = SliceIndex::new(snapshot);
    let clusters = referenced
        .into_iter()
        .filter_map(|name| cluster_specs.get(name))
        .map(|spec| slices.cluster(spec))
        .collect();

    Config {
        ir_version: IR_VERSION,
        listeners,
        clusters,
    }
}
