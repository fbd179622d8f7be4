//! Which GatewayClasses and Gateways this controller is responsible for.

use std::collections::BTreeSet;
use std::sync::Arc;

use coxswain_api::{Gateway, ObjectKey, Snapshot};

/// Names of GatewayClasses with our controllerName (and, when a class
/// filter is set, that name only).
pub fn our_classes(
    snapshot: &Snapshot,
    controller_name: &str,
    class_filter: Option<&str>,
) -> BTreeSet<String> {
    snapshot
        .gateway_classes
        .iter()
        .filter(|(_, class)| class.spec.controller_name == controller_name)
        .filter(|(key, _)| class_filter.is_none_or(|only| &*key.name == only))
        .map(|(key, _)| key.name.to_string())
        .collect()
}

/// Gateways whose class is one of `classes`.
pub fn our_gateways<'a>(
    snapshot: &'a Snapshot,
    classes: &'a BTreeSet<String>,
) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Gateway>)> + 'a {
    snapshot
        .gateways
        .iter()
        .filter(|(_, gw)| classes.contains(&gw.spec.gateway_class_name))
}

/// The snapshot the translator sees: with a class filter, other classes
/// are dropped so they get neither config nor status from us.
pub fn for_translation(snapshot: &Snapshot, class_filter: Option<&str>) -> Snapshot {
    let mut view = snapshot.clone();
    if let Some(only) = class_filter {
        view.gateway_classes.retain(|key, _| &*key.name == only);
    }
    view
}
