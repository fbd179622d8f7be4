//! A load-balancer stand-in (`run --load-balancer-pool CIDR`), for tests
//! only, like the rest of the fakelet: a cluster without a cloud has no
//! controller that gives LoadBalancer Services an address and makes it
//! reachable, and no kube-proxy.
//!
//! Every Service of type LoadBalancer without a `loadBalancerClass` gets an
//! address from the pool (its `spec.loadBalancerIP` when that is a free
//! address of the pool, else none and a warning), written to
//! `status.loadBalancer.ingress`. Traffic to the address reaches the
//! Service's ready pods on this node directly (`lb_routes`): ports are not
//! translated, so a Service's `targetPort` must equal its `port`, which
//! holds for the Services Coxswain provisions. Addresses are released and
//! routes removed when a Service goes away or stops being a LoadBalancer.
//! Run it on one fakelet per cluster: it serves every LoadBalancer Service.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::watch;

use crate::ipam::{Cidr, IpPool};
use crate::lb_addresses::LbAddresses;
use crate::lb_mirror::Mirror;
use crate::lb_plan::{self, Endpoint, Requested, ServiceKey};
use crate::lb_routes;

/// Everything is checked again this often (routes that failed, pods whose
/// namespace was not there yet).
const RESYNC: Duration = Duration::from_secs(5);

/// What is installed for one Service.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Installed {
    address: Ipv4Addr,
    /// The node route's nexthops (empty: unreachable).
    nexthops: Vec<Ipv4Addr>,
    /// Whether the node route is in place.
    routed: bool,
    /// Pod namespaces holding a `local` route for the address.
    locals: BTreeSet<String>,
}

struct Balancer {
    client: Client,
    node: String,
    pool: Cidr,
    addresses: LbAddresses,
    installed: BTreeMap<ServiceKey, Installed>,
    /// The resourceVersion a status was last written against, and what: so a
    /// write is not repeated before its own watch event arrives.
    written: HashMap<ServiceKey, (String, Option<Ipv4Addr>)>,
    /// The last complaint per Service, logged once.
    complaints: HashMap<ServiceKey, String>,
}

/// Serves LoadBalancer Services until `shutdown`, then removes its node
/// routes.
pub async fn run(client: Client, node: String, pool: Cidr, mut shutdown: watch::Receiver<bool>) {
    if let Err(e) = lb_routes::flush_node_routes(pool).await {
        tracing::warn!("load balancer: removing routes of an earlier run: {e}");
    }
    let services: Api<Service> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client.clone());
    let mut service_events = watcher(services, watcher::Config::default())
        .default_backoff()
        .boxed();
    let pod_config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut pod_events = watcher(pods, pod_config).default_backoff().boxed();
    let mut service_mirror: Mirror<Service> = Mirror::new(|s: &Service| {
        format!("{}/{}", s.namespace().unwrap_or_default(), s.name_any())
    });
    let mut pod_mirror: Mirror<Pod> = Mirror::new(|p: &Pod| p.uid().unwrap_or_default());
    let mut balancer = Balancer {
        client,
        node,
        pool,
        addresses: LbAddresses::new(IpPool::new(pool)),
        installed: BTreeMap::new(),
        written: HashMap::new(),
        complaints: HashMap::new(),
    };
    tracing::info!(pool = %format!("{}/{}", pool.network, pool.prefix), "load balancer stand-in serving LoadBalancer Services");
    let mut tick = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            event = service_events.next() => match event {
                Some(Ok(event)) => service_mirror.apply(event),
                Some(Err(e)) => tracing::warn!("load balancer: watching Services: {e}"),
                None => break,
            },
            event = pod_events.next() => match event {
                Some(Ok(event)) => pod_mirror.apply(event),
                Some(Err(e)) => tracing::warn!("load balancer: watching pods: {e}"),
                None => break,
            },
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
        }
        if service_mirror.synced() && pod_mirror.synced() {
            balancer
                .reconcile(&service_mirror.items(), &pod_mirror.items())
                .await;
        }
    }
    balancer.teardown().await;
}

impl Balancer {
    fn complain(&mut self, key: &ServiceKey, message: String) {
        if self.complaints.get(key) != Some(&message) {
            tracing::warn!(service = %key, "load balancer: {message}");
            self.complaints.insert(key.clone(), message);
        }
    }

    async fn reconcile(&mut self, services: &[&Service], pods: &[&Pod]) {
        let mut served: Vec<(ServiceKey, &Service)> = services
            .iter()
            .filter(|s| lb_plan::is_served(s))
            .map(|s| (ServiceKey::of(s), *s))
            .collect();
        let keys: BTreeSet<&ServiceKey> = served.iter().map(|(k, _)| k).collect();
        for key in self.addresses.keys() {
            if !keys.contains(&key) {
                self.addresses.release(&key);
                tracing::info!(service = %key, "load balancer: address released");
            }
        }
        self.complaints.retain(|k, _| keys.contains(k));
        self.written.retain(|k, _| keys.contains(k));
        // Requested addresses first, then those kept from an earlier run,
        // so a fresh allocation never takes an address someone holds.
        served.sort_by_key(|(key, svc)| {
            let rank = match lb_plan::requested(svc) {
                Requested::Ip(_) => 0,
                _ if lb_plan::status_ip(svc).is_some() => 1,
                _ => 2,
            };
            (rank, key.clone())
        });
        let mut desired: BTreeMap<ServiceKey, (Ipv4Addr, Vec<Endpoint>)> = BTreeMap::new();
        for (key, svc) in served {
            let previous = lb_plan::status_ip(svc).filter(|ip| self.pool.contains(*ip));
            match self
                .addresses
                .assign(&key, lb_plan::requested(svc), previous)
            {
                Ok(ip) => {
                    self.complaints.remove(&key);
                    self.write_status(&key, svc, Some(ip)).await;
                    let endpoints = lb_plan::endpoints(svc, pods.iter().copied(), &self.node);
                    desired.insert(key, (ip, endpoints));
                }
                Err(e) => {
                    self.complain(&key, format!("no address: {e}"));
                    self.write_status(&key, svc, None).await;
                }
            }
        }
        self.apply_routes(&desired).await;
    }

    /// Writes `ip` as the Service's only ingress (none: no ingress), unless
    /// it is there already or was just written.
    async fn write_status(&mut self, key: &ServiceKey, svc: &Service, ip: Option<Ipv4Addr>) {
        if lb_plan::status_is(svc, ip) {
            return;
        }
        let version = svc.resource_version().unwrap_or_default();
        if self.written.get(key) == Some(&(version.clone(), ip)) {
            return;
        }
        let ingress = match ip {
            Some(ip) => json!([{ "ip": ip.to_string() }]),
            None => serde_json::Value::Null,
        };
        let patch = json!({ "status": { "loadBalancer": { "ingress": ingress } } });
        let api: Api<Service> = Api::namespaced(self.client.clone(), &key.namespace);
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(service = %key, address = ?ip, "load balancer: status written");
                self.written.insert(key.clone(), (version, ip));
            }
            Err(e) => tracing::warn!(service = %key, "load balancer: status update failed: {e}"),
        }
    }

    async fn apply_routes(&mut self, desired: &BTreeMap<ServiceKey, (Ipv4Addr, Vec<Endpoint>)>) {
        let stale: Vec<ServiceKey> = self
            .installed
            .iter()
            .filter(|(key, inst)| desired.get(*key).is_none_or(|(ip, _)| *ip != inst.address))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            if let Some(inst) = self.installed.remove(&key) {
                remove(&inst).await;
            }
        }
        for (key, (address, endpoints)) in desired {
            let mut inst = self.installed.remove(key).unwrap_or(Installed {
                address: *address,
                nexthops: Vec::new(),
                routed: false,
                locals: BTreeSet::new(),
            });
            sync_one(key, &mut inst, endpoints).await;
            self.installed.insert(key.clone(), inst);
        }
    }

    async fn teardown(&mut self) {
        for (_, inst) in std::mem::take(&mut self.installed) {
            remove(&inst).await;
        }
    }
}

/// Brings one Service's routes to `endpoints`: pod routes first, then the
/// node route over the pods that accept the address, then stale pod routes.
async fn sync_one(key: &ServiceKey, inst: &mut Installed, endpoints: &[Endpoint]) {
    let address = inst.address;
    let mut hops = Vec::new();
    for endpoint in endpoints {
        if !inst.locals.contains(&endpoint.netns) {
            match lb_routes::add_pod_local(&endpoint.netns, address).await {
                Ok(()) => {
                    inst.locals.insert(endpoint.netns.clone());
                }
                Err(e) => {
                    tracing::debug!(service = %key, netns = %endpoint.netns, "load balancer: pod route: {e}");
                    continue;
                }
            }
        }
        hops.push(endpoint.ip);
    }
    hops.sort();
    if !inst.routed || hops != inst.nexthops {
        match lb_routes::set_node_route(address, &hops).await {
            Ok(()) => {
                tracing::info!(service = %key, %address, endpoints = ?hops, "load balancer: route set");
                inst.nexthops = hops;
                inst.routed = true;
            }
            Err(e) => tracing::warn!(service = %key, "load balancer: node route: {e}"),
        }
    }
    let wanted: BTreeSet<&String> = endpoints.iter().map(|e| &e.netns).collect();
    let gone: Vec<String> = inst
        .locals
        .iter()
        .filter(|ns| !wanted.contains(ns))
        .cloned()
        .collect();
    for netns in gone {
        // Fails when the pod's namespace went away with it: nothing left.
        let _ = lb_routes::delete_pod_local(&netns, address).await;
        inst.locals.remove(&netns);
    }
}

async fn remove(inst: &Installed) {
    if let Err(e) = lb_routes::delete_node_route(inst.address).await {
        tracing::debug!(address = %inst.address, "load balancer: removing node route: {e}");
    }
    for netns in &inst.locals {
        let _ = lb_routes::delete_pod_local(netns, inst.address).await;
    }
    tracing::info!(address = %inst.address, "load balancer: routes removed");
}
