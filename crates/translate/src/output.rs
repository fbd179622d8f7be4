use std::collections::BTreeMap;

use coxswain_api::ObjectKey;
use coxswain_api::gateway_api::apis::standard::gatewayclasses::GatewayClassStatus;
use coxswain_api::gateway_api::apis::standard::gateways::GatewayStatus;
use coxswain_api::gateway_api::apis::standard::httproutes::HttpRouteStatus;

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
    pub http_routes: BTreeMap<ObjectKey, HttpRouteStatus>,
}
