//! GatewayClass: which classes are ours, and their status.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::gw::gatewayclasses::{GatewayClassStatus, GatewayClassStatusSupportedFeatures};
use coxswain_api::{GatewayClass, ObjectKey, Snapshot};

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::features::SUPPORTED_FEATURES;

/// Names of the GatewayClasses this controller owns (all of them are accepted).
pub fn our_classes(snapshot: &Snapshot, options: &Options) -> BTreeSet<String> {
    snapshot
        .gateway_classes
        .iter()
        .filter(|(_, class)| class.spec.controller_name == *options.controller_name)
        .map(|(key, _)| key.name.to_string())
        .collect()
}

/// Why a class of ours cannot be accepted: its parametersRef (a default
/// proxy pool for its Gateways) cannot be honoured.
pub fn class_problem(
    snapshot: &Snapshot,
    class: &GatewayClass,
    options: &Options,
) -> Option<String> {
    crate::parameters::class_parameters(snapshot, class, options).err()
}

pub fn class_statuses(
    snapshot: &Snapshot,
    ours: &BTreeSet<String>,
    options: &Options,
) -> BTreeMap<ObjectKey, GatewayClassStatus> {
    snapshot
        .gateway_classes
        .iter()
        .filter(|(key, _)| ours.contains(&*key.name))
        .map(|(key, class)| {
            let stamp = Stamp {
                generation: class.metadata.generation,
                now: &options.now,
            };
            let accepted = match class_problem(snapshot, class, options) {
                None => Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    "Accepted by the Coxswain controller",
                ),
                Some(why) => Cond::new(
                    ConditionType::Accepted,
                    false,
                    Reason::InvalidParameters,
                    why,
                ),
            };
            let conditions = stamp.all(vec![
                accepted,
                Cond::new(
                    ConditionType::SupportedVersion,
                    true,
                    Reason::SupportedVersion,
                    "Gateway API version is supported",
                ),
            ]);
            let features = SUPPORTED_FEATURES
                .iter()
                .map(|name| GatewayClassStatusSupportedFeatures {
                    name: (*name).to_string(),
                })
                .collect();
            let status = GatewayClassStatus {
                conditions: Some(conditions),
                supported_features: Some(features),
            };
            (key.clone(), status)
        })
        .collect()
}
