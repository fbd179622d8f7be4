use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::crds::{ClientTrafficPolicyStatus, CoxswainBackendPolicyStatus, FilterStatus};
use coxswain_api::gateway_api::apis::standard::backendtlspolicies::BackendTlsPolicyStatus;
use coxswain_api::gateway_api::apis::standard::listenersets::ListenerSetStatus;
use coxswain_api::gw::gatewayclasses::GatewayClassStatus;
use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::gw::xbackendtrafficpolicies::XBackendTrafficPolicyStatus;
use coxswain_ir::RouteKind;

use crate::IngressOutcome;
use crate::conditions::ConditionType;
use crate::route::{RouteKey, RouteStatus};
use coxswain_api::{CoxswainGatewayParameters, Kind, ObjectKey};

/// The result of one translation.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub ir: coxswain_ir::Config,
    pub statuses: Statuses,
    /// Gateways served by a proxy pool of their own (`namespace/name` ->
    /// the CoxswainGatewayParameters their parametersRef resolved to; the
    /// object, so its key and spec come without a copy). Their listeners
    /// are in `ir` like any other's; a provider keeps them off the shared
    /// proxies.
    pub dedicated: BTreeMap<String, Arc<CoxswainGatewayParameters>>,
}

/// Computed status for every object the translator is responsible for.
/// Objects that belong to other controllers have no entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Statuses {
    pub gateway_classes: BTreeMap<ObjectKey, GatewayClassStatus>,
    pub gateways: BTreeMap<ObjectKey, GatewayStatus>,
    /// Routes of every kind. Shared with the translator's memo: an
    /// unchanged route's status is not rebuilt.
    pub routes: BTreeMap<RouteKey, Arc<RouteStatus>>,
    pub backend_tls_policies: BTreeMap<ObjectKey, BackendTlsPolicyStatus>,
    pub listener_sets: BTreeMap<ObjectKey, ListenerSetStatus>,
    pub backend_policies: BTreeMap<ObjectKey, CoxswainBackendPolicyStatus>,
    pub backend_traffic_policies: BTreeMap<ObjectKey, XBackendTrafficPolicyStatus>,
    pub client_traffic_policies: BTreeMap<ObjectKey, ClientTrafficPolicyStatus>,
    /// Coxswain's filter resources (IpAccessControl, ...), by kind.
    pub filters: BTreeMap<(Kind, ObjectKey), FilterStatus>,
    /// Our Ingresses: `status.loadBalancer` and what is not served.
    pub ingresses: BTreeMap<ObjectKey, IngressOutcome>,
}

/// The API kind of a route kind.
pub fn api_kind(kind: RouteKind) -> Kind {
    match kind {
        RouteKind::Http => Kind::HttpRoute,
        RouteKind::Grpc => Kind::GrpcRoute,
        RouteKind::Tls => Kind::TlsRoute,
        RouteKind::Tcp => Kind::TcpRoute,
        RouteKind::Udp => Kind::UdpRoute,
        RouteKind::Ingress => Kind::Ingress,
    }
}

/// The route kind of an API kind, if it is a route.
pub fn route_kind(kind: Kind) -> Option<RouteKind> {
    [
        RouteKind::Http,
        RouteKind::Grpc,
        RouteKind::Tls,
        RouteKind::Tcp,
        RouteKind::Udp,
    ]
    .into_iter()
    .find(|r| api_kind(*r) == kind)
}

impl Statuses {
    /// The computed `status` of one object as JSON, for writing back or
    /// printing.
    pub fn status_json(&self, kind: Kind, key: &ObjectKey) -> Option<serde_json::Value> {
        let value = match kind {
            Kind::GatewayClass => serde_json::to_value(self.gateway_classes.get(key)?),
            Kind::Gateway => serde_json::to_value(self.gateways.get(key)?),
            Kind::BackendTlsPolicy => serde_json::to_value(self.backend_tls_policies.get(key)?),
            Kind::ListenerSet => serde_json::to_value(self.listener_sets.get(key)?),
            Kind::CoxswainBackendPolicy => serde_json::to_value(self.backend_policies.get(key)?),
            Kind::XBackendTrafficPolicy => {
                serde_json::to_value(self.backend_traffic_policies.get(key)?)
            }
            Kind::ClientTrafficPolicy => {
                serde_json::to_value(self.client_traffic_policies.get(key)?)
            }
            Kind::Ingress => serde_json::to_value(&self.ingresses.get(key)?.status),
            _ if self.filters.contains_key(&(kind, key.clone())) => {
                serde_json::to_value(self.filters.get(&(kind, key.clone()))?)
            }
            _ => {
                let route = (route_kind(kind)?, key.clone());
                serde_json::to_value(self.routes.get(&route)?.as_ref())
            }
        };
        value.ok()
    }
}

impl Output {
    /// True when every object we are responsible for is accepted and every
    /// route's references resolved (what `coxswain check` exits 0 on).
    pub fn all_accepted(&self) -> bool {
        let ok = |conditions: &[coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
                  kinds: &[&str]| {
            conditions
                .iter()
                .filter(|c| kinds.contains(&c.type_.as_str()))
                .all(|c| c.status == "True")
        };
        let classes = self
            .statuses
            .gateway_classes
            .values()
            .all(|s| ok(s.conditions.as_deref().unwrap_or_default(), &["Accepted"]));
        let gateways = self.statuses.gateways.values().all(|s| {
            ok(
                s.conditions.as_deref().unwrap_or_default(),
                &["Accepted", "Programmed"],
            ) && s
                .listeners
                .iter()
                .flatten()
                .all(|l| ok(&l.conditions, &["Accepted", "ResolvedRefs", "Programmed"]))
        });
        let routes = self.statuses.routes.values().all(|s| {
            s.parents
                .iter()
                .all(|p| p.all_true(&[ConditionType::Accepted, ConditionType::ResolvedRefs]))
        });
        let policies = self.statuses.backend_tls_policies.values().all(|s| {
            s.ancestors
                .iter()
                .all(|a| ok(&a.conditions, &["Accepted", "ResolvedRefs"]))
        });
        let sets = self.statuses.listener_sets.values().all(|s| {
            ok(
                s.conditions.as_deref().unwrap_or_default(),
                &["Accepted", "Programmed"],
            ) && s
                .listeners
                .iter()
                .flatten()
                .all(|l| ok(&l.conditions, &["Accepted", "Programmed", "ResolvedRefs"]))
        });
        // Accepted, and nothing of it ignored.
        let whole = |conditions: &[coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]| {
            ok(conditions, &["Accepted"])
                && !conditions
                    .iter()
                    .any(|c| c.type_ == "PartiallyInvalid" && c.status == "True")
        };
        let backend_policies = self
            .statuses
            .backend_policies
            .values()
            .all(|s| s.ancestors.iter().all(|a| whole(&a.conditions)));
        let traffic = self
            .statuses
            .backend_traffic_policies
            .values()
            .all(|s| s.ancestors.iter().all(|a| whole(&a.conditions)));
        // Coxswain's filter kinds: accepted, with every reference resolved,
        // and (as a Gateway policy) accepted by every Gateway it targets.
        let filters = self.statuses.filters.values().all(|s| {
            ok(&s.conditions, &["Accepted", "ResolvedRefs"])
                && s.ancestors.iter().all(|a| whole(&a.conditions))
        });
        let client_traffic = self
            .statuses
            .client_traffic_policies
            .values()
            .all(|s| s.ancestors.iter().all(|a| whole(&a.conditions)));
        let ingresses = self
            .statuses
            .ingresses
            .values()
            .all(|o| o.problems.is_empty());
        classes
            && ingresses
            && gateways
            && routes
            && policies
            && sets
            && backend_policies
            && traffic
            && client_traffic
            && filters
    }
}
