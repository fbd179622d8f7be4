//! Assembles the IR: sockets from served listeners, routes in spec order,
//! clusters for every referenced Service port.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::{ObjectKey, Snapshot, same_objects};
use coxswain_ir::{
    BackendPolicy, Balancer, Cluster, Config, ExtensionKey, Filter, HostSpecificity, IR_VERSION,
    Listener, Serve, Socket, TlsTermination, Transport, UpstreamTls,
};

use crate::endpoints::SliceIndex;
use crate::gateway::{GatewayModel, ListenerOwner, Protocol, TlsMode};
use crate::ingress::{IngressModel, IngressOptions};
use crate::policy::backend_policy::BackendPolicyIndex;
use crate::policy::backend_tls::BackendTlsIndex;
use crate::policy::backend_traffic::BackendTrafficIndex;
use crate::policy::client_traffic::ClientTrafficIndex;
use crate::route::{ClusterSpec, IrRoute, ListenerRoutes};

pub fn build_config(
    snapshot: &Snapshot,
    gateways: &BTreeMap<ObjectKey, GatewayModel>,
    mut routes: ListenerRoutes,
    (cluster_specs, backend_tls, backend_policies, backend_traffic): (
        &BTreeMap<String, ClusterSpec>,
        &BackendTlsIndex<'_>,
        &BackendPolicyIndex<'_>,
        &BackendTrafficIndex<'_>,
    ),
    client_traffic: &ClientTrafficIndex,
    (ingress, ingress_options, ingress_address): (&mut IngressModel, &IngressOptions, IpAddr),
    memo: &mut Option<ClusterMemo>,
) -> Config {
    // Each listener tagged `true` when it serves Ingresses.
    let mut sockets: BTreeMap<(Transport, IpAddr, u16), Vec<(bool, Listener)>> = BTreeMap::new();
    let gateway_auth = crate::extension::GatewayAuthIndex::new(snapshot);
    for (key, gw) in gateways {
        let mandate = gateway_auth.for_gateway(key);
        let Ok(addresses) = &gw.addresses else {
            continue;
        };
        for (idx, l) in gw.listeners.iter().enumerate() {
            if !gw.listener_served(l) {
                continue;
            }
            let tls = match &l.tls {
                Some(Ok(certificates)) => Some(TlsTermination {
                    certificates: certificates.clone(),
                    client_validation: l.frontend.as_ref().and_then(|f| f.validation.clone()),
                }),
                _ => None,
            };
            let mut attached = routes
                .get_mut(key)
                .and_then(|m| m.remove(&idx))
                .unwrap_or_default();
            attached.sort_by_key(|a| a.order);
            let Some(protocol) = l.protocol else {
                continue;
            };
            let listener = Listener {
                gateway: key.to_string(),
                name: l.name.clone(),
                hostname: l.hostname.clone(),
                tls,
                serve: serve(
                    protocol,
                    attached.into_iter().map(|a| a.route),
                    mandate.as_ref(),
                ),
                listener_set: match &l.owner {
                    ListenerOwner::Gateway => None,
                    ListenerOwner::ListenerSet(key) => Some(key.to_string()),
                },
                backend_client_certificate: gw.backend_client_certificate(),
                access_log: match &l.owner {
                    ListenerOwner::Gateway => client_traffic.access_log(key, &l.name),
                    ListenerOwner::ListenerSet(_) => None,
                },
            };
            let transport = match protocol {
                Protocol::Udp => Transport::Udp,
                _ => Transport::Tcp,
            };
            for address in addresses {
                // Protocols on one port never mix within a Gateway
                // (ProtocolConflict); across Gateways the sockets are shared.
                sockets
                    .entry((transport, *address, l.port))
                    .or_default()
                    .push((false, listener.clone()));
            }
        }
    }
    let ingress_listeners = crate::ingress::listeners(
        ingress,
        ingress_options.http_port,
        ingress_options.https_port,
    );
    for (port, listener) in ingress_listeners {
        sockets
            .entry((Transport::Tcp, ingress_address, port))
            .or_default()
            .push((true, listener));
    }

    let sockets: Vec<Socket> = sockets
        .into_iter()
        .map(|((transport, address, port), mut listeners)| {
            // A Gateway listener goes before an Ingress one of the same
            // hostname: the Gateway's takes those requests (reported).
            listeners.sort_by(|(ai, a), (bi, b)| {
                HostSpecificity::of(a.hostname.as_ref())
                    .cmp(&HostSpecificity::of(b.hostname.as_ref()))
                    .then_with(|| a.hostname.cmp(&b.hostname))
                    .then_with(|| ai.cmp(bi))
                    .then_with(|| a.gateway.cmp(&b.gateway))
                    .then_with(|| a.listener_set.cmp(&b.listener_set))
                    .then_with(|| a.name.cmp(&b.name))
            });
            crate::ingress::report_shadowed(ingress, port, &listeners);
            let listeners = listeners.into_iter().map(|(_, l)| l).collect();
            Socket {
                proxy_protocol: client_traffic.proxy_protocol(transport, address, port),
                transport,
                address,
                port,
                listeners,
            }
        })
        .collect();

    // Specs come only from rules attached to served listeners, so every one
    // of them is referenced by the IR; the map is already sorted by name.
    // The authorization services those rules ask are clusters too.
    let keys = extension_keys(&sockets);
    // Copied only when Ingress or ExternalAuth add clusters of their own.
    let mut specs = std::borrow::Cow::Borrowed(cluster_specs);
    for spec in &ingress.clusters {
        if !specs.contains_key(&spec.name) {
            specs.to_mut().insert(spec.name.clone(), spec.clone());
        }
    }
    for spec in crate::extension::clusters(snapshot, &keys) {
        if !specs.contains_key(&spec.name) {
            specs.to_mut().insert(spec.name.clone(), spec);
        }
    }
    let clusters = clusters(
        snapshot,
        &specs,
        (backend_tls, backend_policies, backend_traffic),
        memo,
    );

    let mut extensions = crate::extension::table(snapshot, &keys);
    // Filters Ingress annotations describe have no resource to read.
    for extension in &mut extensions {
        if let Some(spec) = ingress.extensions.get(&extension.key) {
            extension.spec = spec.clone();
        }
    }
    Config {
        ir_version: IR_VERSION,
        sockets,
        clusters,
        extensions,
    }
}

/// The filter resources the HTTP rules of `sockets` reference.
fn extension_keys(sockets: &[Socket]) -> BTreeSet<ExtensionKey> {
    sockets
        .iter()
        .flat_map(|s| &s.listeners)
        .filter_map(|l| match &l.serve {
            Serve::Http(routes) => Some(routes),
            _ => None,
        })
        .flatten()
        .flat_map(|r| &r.filters)
        .filter_map(|f| match f {
            Filter::Extension(key) => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// What a listener of `protocol` serves: its routes, in spec order. A
/// listener only ever takes routes of its protocol's kind. The Gateway's
/// CoxswainExternalAuth policy (`mandate`) goes first in every HTTP and
/// gRPC rule's filters: checked before the rule's own, and never left out.
fn serve(
    protocol: Protocol,
    routes: impl Iterator<Item = IrRoute>,
    mandate: Option<&ExtensionKey>,
) -> Serve {
    let (mut http, mut l4) = (Vec::new(), Vec::new());
    for route in routes {
        match route {
            IrRoute::Http(r) => http.push(match mandate {
                Some(key) => {
                    let mut route = (*r).clone();
                    route.filters.insert(0, Filter::Extension(key.clone()));
                    std::sync::Arc::new(route)
                }
                None => r,
            }),
            IrRoute::L4(r) => l4.push(r),
        }
    }
    match protocol {
        Protocol::Http | Protocol::Https => Serve::Http(http),
        Protocol::Tls(TlsMode::Passthrough) => Serve::TlsPassthrough(l4),
        Protocol::Tls(TlsMode::Terminate) | Protocol::Tcp => Serve::Tcp(l4),
        Protocol::Udp => Serve::Udp(l4),
    }
}

/// The Service's policy with what an Ingress's annotations set on its own
/// copy of the cluster taking precedence.
fn annotated_policy(spec: &ClusterSpec, policy: Option<BackendPolicy>) -> Option<BackendPolicy> {
    let Some(a) = &spec.annotated else {
        return policy;
    };
    let mut policy = policy.unwrap_or_else(|| BackendPolicy {
        policy: format!("Ingress {} annotations", a.by),
        connect_timeout_ms: None,
        idle_timeout_ms: None,
        balancer: Balancer::RoundRobin,
        breaker: None,
        persistence: None,
    });
    if let Some(balancer) = &a.balancer {
        policy.balancer = balancer.clone();
    }
    if let Some(ms) = a.connect_timeout_ms {
        policy.connect_timeout_ms = Some(ms);
    }
    Some(policy)
}

/// The clusters of the last run and what they were built from.
pub struct ClusterMemo {
    inputs: Snapshot,
    specs: BTreeMap<String, ClusterSpec>,
    clusters: Vec<Arc<Cluster>>,
}

/// What a cluster is built from besides its spec: endpoints, TLS and
/// backend policies, and the ConfigMaps and Secrets holding CAs.
fn cluster_inputs(snapshot: &Snapshot) -> Snapshot {
    Snapshot {
        endpoint_slices: snapshot.endpoint_slices.clone(),
        backend_tls_policies: snapshot.backend_tls_policies.clone(),
        backend_policies: snapshot.backend_policies.clone(),
        backend_traffic_policies: snapshot.backend_traffic_policies.clone(),
        config_maps: snapshot.config_maps.clone(),
        secrets: snapshot.secrets.clone(),
        ..Snapshot::default()
    }
}

/// Clusters for `specs`, reused from `memo` when neither the specs nor any
/// of their inputs changed.
fn clusters(
    snapshot: &Snapshot,
    specs: &BTreeMap<String, ClusterSpec>,
    (backend_tls, backend_policies, backend_traffic): (
        &BackendTlsIndex<'_>,
        &BackendPolicyIndex<'_>,
        &BackendTrafficIndex<'_>,
    ),
    memo: &mut Option<ClusterMemo>,
) -> Vec<Arc<Cluster>> {
    if let Some(m) = memo.as_ref()
        && same_objects(&m.inputs.endpoint_slices, &snapshot.endpoint_slices)
        && same_objects(
            &m.inputs.backend_tls_policies,
            &snapshot.backend_tls_policies,
        )
        && same_objects(&m.inputs.backend_policies, &snapshot.backend_policies)
        && same_objects(
            &m.inputs.backend_traffic_policies,
            &snapshot.backend_traffic_policies,
        )
        && same_objects(&m.inputs.config_maps, &snapshot.config_maps)
        && same_objects(&m.inputs.secrets, &snapshot.secrets)
        && m.specs == *specs
    {
        return m.clusters.clone();
    }
    let slices = SliceIndex::new(snapshot);
    let clusters: Vec<Arc<Cluster>> = specs
        .values()
        .map(|spec| {
            Arc::new(Cluster {
            tls: backend_tls.cluster_tls(spec).or_else(|| {
                spec.requires_tls.then(|| UpstreamTls::Invalid {
                    reason: format!(
                        "{}: its appProtocol asks for TLS, but no BackendTLSPolicy says how to verify it",
                        spec.name
                    ),
                })
            }),
            policy: annotated_policy(spec, backend_policies.cluster_policy(spec)),
            retry_budget: backend_traffic.cluster_budget(spec),
            ..slices.cluster(spec)
        })
        })
        .collect();
    *memo = Some(ClusterMemo {
        inputs: cluster_inputs(snapshot),
        specs: specs.clone(),
        clusters: clusters.clone(),
    });
    clusters
}
