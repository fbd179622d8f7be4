use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::gw::gatewayclasses::GatewayClassStatus;
use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::gw::httproutes::HttpRouteStatus;
use coxswain_api::{Kind, ObjectKey};

/// The result of one translation.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub ir: coxswain_ir::Config,
    pub statuses: Statuses,
}

/// Computed status for every object the translator is responsible for.
/// Objects that belong to other controllers have no entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Statuses {
    pub gateway_classes: BTreeMap<ObjectKey, GatewayClassStatus>,
    pub gateways: BTreeMap<ObjectKey, GatewayStatus>,
    /// Shared with the translator's memo: an unchanged route's status is
    /// not rebuilt.
    pub http_routes: BTreeMap<ObjectKey, Arc<HttpRouteStatus>>,
}

impl Statuses {
    /// The computed `status` of one object as JSON, for writing back or
    /// printing.
    pub fn status_json(&self, kind: Kind, key: &ObjectKey) -> Option<serde_json::Value> {
        let value = match kind {
            Kind::GatewayClass => serde_json::to_value(self.gateway_classes.get(key)?),
            Kind::Gateway => serde_json::to_value(self.gateways.get(key)?),
            Kind::HttpRoute => serde_json::to_value(self.http_routes.get(key)?.as_ref()),
            _ => return None,
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
        let routes = self.statuses.http_routes.values().all(|s| {
            s.parents
                .iter()
                .all(|p| ok(&p.conditions, &["Accepted", "ResolvedRefs"]))
        });
        classes && gateways && routes
    }
}
