//! `parametersRef`: which Gateways are served by a proxy pool of their own.
//!
//! A Gateway whose `spec.infrastructure.parametersRef` names a
//! CoxswainGatewayParameters of its namespace is dedicated; without a ref
//! of its own, its GatewayClass's ref (a per-class default, in the
//! namespace the ref names) decides. Any other kind, a missing object, or
//! parameters the pool cannot be built from are InvalidParameters; so is
//! every ref of ours when [`Options::dedicated_pools`] is off (`coxswain
//! run` and `check` provision nothing).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coxswain_api::crds::{
    CoxswainGatewayParameters, CoxswainGatewayParametersSpec, GROUP, ServiceTypeOverride,
};
use coxswain_api::{Gateway, GatewayClass, ObjectKey, Snapshot};

use crate::Options;

pub const PARAMETERS_KIND: &str = "CoxswainGatewayParameters";

/// A Gateway's pool parameters: `Ok(None)` when it is served by the
/// shared proxies, or why its ref cannot be honoured.
pub type Resolution = Result<Option<Arc<CoxswainGatewayParameters>>, String>;

/// The parameters a GatewayClass's ref names (`Ok(None)`: no ref), or why
/// the class cannot be accepted.
pub fn class_parameters(
    snapshot: &Snapshot,
    class: &GatewayClass,
    options: &Options,
) -> Resolution {
    let Some(r) = class.spec.parameters_ref.as_ref() else {
        return Ok(None);
    };
    ours(&r.group, &r.kind, &r.name)?;
    let Some(namespace) = r.namespace.as_deref().filter(|n| !n.is_empty()) else {
        return Err(format!(
            "parametersRef {PARAMETERS_KIND} {:?} has no namespace: the kind is namespaced",
            r.name
        ));
    };
    lookup(
        snapshot,
        &ObjectKey::new(namespace, r.name.as_str()),
        options,
    )
    .map(Some)
}

/// The Gateway's own ref, else its class's. A problem with the class's
/// ref is the class's (reported there and as `class_rejected`), so it
/// resolves to shared here.
pub fn gateway_parameters(
    snapshot: &Snapshot,
    key: &ObjectKey,
    gw: &Gateway,
    options: &Options,
) -> Resolution {
    let own = gw
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.parameters_ref.as_ref());
    if let Some(r) = own {
        ours(&r.group, &r.kind, &r.name)?;
        let target = ObjectKey::new(&*key.namespace, r.name.as_str());
        return lookup(snapshot, &target, options).map(Some);
    }
    let class = snapshot
        .gateway_classes
        .get(&ObjectKey::cluster(gw.spec.gateway_class_name.as_str()));
    Ok(class.and_then(|c| class_parameters(snapshot, c, options).ok().flatten()))
}

/// The Gateways of `classes` served by a pool of their own, keyed
/// `namespace/name` (what [`crate::Output::dedicated`] holds). A Gateway
/// of a class that is not accepted is not served at all, so it has none.
pub fn dedicated(
    snapshot: &Snapshot,
    classes: &BTreeSet<String>,
    options: &Options,
) -> BTreeMap<String, Arc<CoxswainGatewayParameters>> {
    snapshot
        .gateways
        .iter()
        .filter(|(_, gw)| classes.contains(&gw.spec.gateway_class_name))
        .filter(|(_, gw)| {
            let class = snapshot
                .gateway_classes
                .get(&ObjectKey::cluster(gw.spec.gateway_class_name.as_str()));
            class.is_some_and(|c| class_parameters(snapshot, c, options).is_ok())
        })
        .filter_map(|(key, gw)| {
            let found = gateway_parameters(snapshot, key, gw, options).ok()??;
            Some((key.to_string(), found))
        })
        .collect()
}

/// What a route's outcome reads of parameters: which classes and Gateways
/// they make unusable. The memo compares it, since parameter objects are
/// not route inputs (a change of replicas must not recompute every route).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdicts {
    classes: BTreeMap<String, String>,
    gateways: BTreeMap<ObjectKey, String>,
}

pub fn verdicts(snapshot: &Snapshot, options: &Options) -> Verdicts {
    let mut out = Verdicts::default();
    for (key, class) in &snapshot.gateway_classes {
        if let Err(why) = class_parameters(snapshot, class, options) {
            out.classes.insert(key.name.to_string(), why);
        }
    }
    for (key, gw) in &snapshot.gateways {
        if let Err(why) = gateway_parameters(snapshot, key, gw, options) {
            out.gateways.insert(key.clone(), why);
        }
    }
    out
}

/// Refs to anything but our kind are not supported.
fn ours(group: &str, kind: &str, name: &str) -> Result<(), String> {
    if group == GROUP && kind == PARAMETERS_KIND {
        return Ok(());
    }
    Err(format!(
        "parametersRef {group}/{kind} {name:?} is not supported: only {GROUP}/{PARAMETERS_KIND} is"
    ))
}

fn lookup(
    snapshot: &Snapshot,
    target: &ObjectKey,
    options: &Options,
) -> Result<Arc<CoxswainGatewayParameters>, String> {
    if !options.dedicated_pools {
        return Err(format!(
            "{PARAMETERS_KIND} {target} asks for a dedicated proxy pool, and pools are provisioned only by `coxswain controller`"
        ));
    }
    let found = snapshot
        .gateway_parameters
        .get(target)
        .ok_or_else(|| format!("{PARAMETERS_KIND} {target} not found"))?;
    match spec_problem(&found.spec) {
        Some(why) => Err(format!("{PARAMETERS_KIND} {target}: {why}")),
        None => Ok(found.clone()),
    }
}

/// What the CRD schema checks too, for objects that did not pass through
/// it (files, an older CRD): a pool cannot be built from these.
pub fn spec_problem(spec: &CoxswainGatewayParametersSpec) -> Option<String> {
    let service_type = spec
        .service_type
        .unwrap_or(ServiceTypeOverride::LoadBalancer);
    let service = spec.service.as_ref();
    if spec.replicas.is_some_and(|r| r < 0) {
        return Some("replicas must not be negative".to_string());
    }
    if spec.image.as_deref().is_some_and(str::is_empty) {
        return Some("image must not be empty".to_string());
    }
    if spec.log_level.as_deref().is_some_and(str::is_empty) {
        return Some("logLevel must not be empty".to_string());
    }
    if service.is_some_and(|s| s.load_balancer_class.is_some())
        && service_type != ServiceTypeOverride::LoadBalancer
    {
        return Some("service.loadBalancerClass needs serviceType LoadBalancer".to_string());
    }
    if service.is_some_and(|s| s.external_traffic_policy.is_some())
        && service_type == ServiceTypeOverride::ClusterIp
    {
        return Some(
            "service.externalTrafficPolicy needs serviceType LoadBalancer or NodePort".to_string(),
        );
    }
    if let Some(pdb) = &spec.pod_disruption_budget
        && pdb.min_available.is_some() == pdb.max_unavailable.is_some()
    {
        return Some(
            "podDisruptionBudget needs exactly one of minAvailable and maxUnavailable".to_string(),
        );
    }
    None
}
