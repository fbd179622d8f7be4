//! Gateway API semantics as a pure function: [`translate`] turns a
//! [`Snapshot`] into the proxy's IR plus the status of every object.
//! Synchronous and deterministic: no I/O, no tokio, no clock (the timestamp
//! for new conditions is injected through [`Options::now`]).

// Input (files, API objects, requests) must never panic the gateway.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod ca_bundle;
mod conditions;
mod data_plane;
mod duration;
mod endpoints;
mod extension;
mod features;
mod gateway;
mod gateway_class;
mod ingress;
mod ir_build;
mod memo;
mod output;
mod parameters;
mod policy;
mod reference_grant;
mod route;
mod selector;

pub use conditions::{ConditionType, Reason};
pub use data_plane::mark_unbound;
pub use duration::parse_duration_ms;
pub use features::SUPPORTED_FEATURES;
/// The Gateway a ListenerSet names as its parent, if it names one.
pub use gateway::parent_of as listener_set_parent;
pub use ingress::annotations;
pub use ingress::{INGRESS_OWNER, IngressOptions, IngressOutcome, IngressProblem};
pub use memo::Translator;
pub use output::{Output, Statuses, api_kind, route_kind};
pub use parameters::{PARAMETERS_KIND, spec_problem};
pub use policy::backend_tls::MAX_ANCESTORS;
pub use route::{ParentStatus, RouteKey, RouteStatus};

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::{CoxswainGatewayParameters, ObjectKey, Snapshot};

/// The controller name Coxswain claims GatewayClasses for by default.
pub const DEFAULT_CONTROLLER_NAME: &str = "coxswain-labs.dev/gateway-controller";

/// What the translator needs to know about its environment.
#[derive(Clone, Debug)]
pub struct Options {
    /// GatewayClasses whose `spec.controllerName` equals this are ours.
    /// Shared: every route's status names it.
    pub controller_name: Arc<str>,
    /// Listeners of Gateways without `spec.addresses` bind here.
    pub default_address: IpAddr,
    /// `lastTransitionTime` for conditions computed in this run.
    pub now: Time,
    /// Where our Ingresses are served.
    pub ingress: IngressOptions,
    /// Does someone provision dedicated proxy pools (`coxswain controller`
    /// does)? When not, a parametersRef naming CoxswainGatewayParameters
    /// is InvalidParameters rather than silently served by the shared proxy.
    pub dedicated_pools: bool,
}

impl Options {
    /// As standalone mode translates by default: Ingresses on ports 80 and
    /// 443, and nobody provisioning dedicated pools.
    pub fn standalone(
        controller_name: impl Into<Arc<str>>,
        default_address: IpAddr,
        now: Time,
    ) -> Options {
        Options {
            controller_name: controller_name.into(),
            default_address,
            now,
            ingress: IngressOptions::default(),
            dedicated_pools: false,
        }
    }
}

/// Bind addresses a provider assigned to a Gateway (e.g. from an address
/// pool), or why it could not (`Programmed=False`, reason AddressNotUsable).
pub type AssignedAddresses = Result<Vec<IpAddr>, String>;

/// The Gateways served by a proxy pool of their own, keyed
/// `namespace/name`: [`Output::dedicated`] without translating (a provider
/// needs it first, e.g. to keep them out of its address pool).
pub fn dedicated_gateways(
    snapshot: &Snapshot,
    options: &Options,
) -> BTreeMap<String, Arc<CoxswainGatewayParameters>> {
    let classes = gateway_class::our_classes(snapshot, options);
    parameters::dedicated(snapshot, &classes, options)
}

/// Translates a snapshot. Never panics on any input.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Output {
    translate_with_addresses(snapshot, options, &BTreeMap::new())
}

/// [`translate`], with bind addresses the provider assigned per Gateway.
/// Gateways without an entry bind their `spec.addresses` or
/// [`Options::default_address`]; non-IPAddress requests stay unsupported.
pub fn translate_with_addresses(
    snapshot: &Snapshot,
    options: &Options,
    assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
) -> Output {
    translate_memoised(snapshot, options, assigned, &mut memo::Memo::default())
}

/// The translation, reusing route outcomes from `memo` that are still valid
/// for `snapshot` (see [`Translator`]).
fn translate_memoised(
    snapshot: &Snapshot,
    options: &Options,
    assigned: &BTreeMap<ObjectKey, AssignedAddresses>,
    memo: &mut memo::Memo,
) -> Output {
    let classes = gateway_class::our_classes(snapshot, options);
    let mut gateways = gateway::build_gateways(snapshot, &classes, options, assigned);
    let attachments = route::attach_routes(snapshot, &mut gateways, options, &mut memo.routes);
    let backend_tls = policy::backend_tls::BackendTlsIndex::new(snapshot);
    let backend_policies = policy::backend_policy::BackendPolicyIndex::new(snapshot);
    let backend_traffic = policy::backend_traffic::BackendTrafficIndex::new(snapshot);
    let client_traffic =
        policy::client_traffic::ClientTrafficIndex::new(snapshot, &gateways, options);
    let mut ingresses = ingress::build(snapshot, options);
    let ir = ir_build::build_config(
        snapshot,
        &gateways,
        attachments.routes,
        (
            &attachments.clusters,
            &backend_tls,
            &backend_policies,
            &backend_traffic,
        ),
        &client_traffic,
        (&mut ingresses, &options.ingress, options.default_address),
        &mut memo.clusters,
    );
    let statuses = Statuses {
        gateway_classes: gateway_class::class_statuses(snapshot, &classes, options),
        gateways: gateways
            .iter()
            .map(|(key, gw)| (key.clone(), gateway::gateway_status(gw, options)))
            .collect(),
        routes: attachments.statuses,
        backend_tls_policies: backend_tls.statuses(&attachments.gateways_by_service, options),
        backend_policies: backend_policies.statuses(&attachments.clusters, options),
        backend_traffic_policies: backend_traffic
            .statuses(&attachments.gateways_by_service, options),
        client_traffic_policies: client_traffic.statuses(),
        ingresses: ingress::outcomes(&mut ingresses, &options.ingress, options.default_address),
        filters: extension::statuses(snapshot, options),
        listener_sets: gateways
            .values()
            .flat_map(|gw| {
                gw.listener_sets.iter().map(move |set| {
                    (
                        set.key.clone(),
                        gateway::listener_set_status(gw, set, options),
                    )
                })
            })
            .collect(),
    };
    Output {
        ir,
        statuses,
        dedicated: parameters::dedicated(snapshot, &classes, options),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod memo_tests;
