//! Checks across Ingresses: where Gateway API precedence could pick another
//! rule than the Ingress does, and what the IngressClasses say that one
//! GatewayClass cannot.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use coxswain_api::{Ingress, ObjectKey, Snapshot};

use super::convert::{Migrated, PathKind, Settings, Target};
use super::report::{Report, Severity};

/// Every class of the migrated Ingresses becomes the one GatewayClass;
/// what an IngressClass says beyond its name is not carried over.
pub fn report_classes(
    snapshot: &Snapshot,
    selected: &[(&ObjectKey, &Arc<Ingress>)],
    settings: &Settings,
    report: &mut Report,
) {
    let classes: BTreeSet<Option<String>> = selected
        .iter()
        .map(|(_, ingress)| super::read::class_of(snapshot, ingress))
        .collect();
    let named: Vec<String> = classes
        .iter()
        .map(|c| c.clone().unwrap_or_else(|| "(none)".into()))
        .collect();
    if classes.len() > 1 {
        report.general(
            Severity::Note,
            "IngressClass",
            format!(
                "Ingresses of classes {} all attach to the one Gateway of GatewayClass {} (use --ingress-class to migrate one class at a time)",
                named.join(", "),
                settings.gateway_class
            ),
        );
    }
    for class in classes.iter().flatten() {
        let object = snapshot
            .ingress_classes
            .get(&ObjectKey::cluster(class.clone()));
        if object.is_some_and(|c| c.spec.as_ref().is_some_and(|s| s.parameters.is_some())) {
            report.general(
                Severity::Lost,
                format!("IngressClass {class}"),
                "spec.parameters is not migrated (a controller's own configuration)",
            );
        }
    }
}

/// Two Ingresses' regular-expression paths for one host can both match a
/// request: the Ingress serves the older Ingress's rule, Gateway API the
/// older HTTPRoute's, so the outcome depends on the order the routes are
/// created in. (Other equal matches were left out above.)
pub fn report_regex_ties(migrated: &[Migrated<'_>], report: &mut Report) {
    let mut first: BTreeMap<Option<&str>, &ObjectKey> = BTreeMap::new();
    for part in migrated {
        let regex = part
            .rules
            .iter()
            .filter(|r| r.kind == PathKind::RegularExpression);
        for rule in regex {
            let host = rule.host.as_deref();
            match first.get(&host) {
                None => {
                    first.insert(host, part.key);
                }
                Some(older) if *older != part.key => report.lost(
                    part.key,
                    &rule.at,
                    format!(
                        "Ingress {older} also has regular-expression paths for {}: where both match, the older Ingress wins here and the older HTTPRoute in Gateway API, so create {older}'s routes first (the output lists them first)",
                        host.unwrap_or("every host")
                    ),
                ),
                Some(_) => {}
            }
        }
    }
}

/// A CoxswainBackendPolicy applies to every route to its Service, where
/// the annotation applied to one Ingress's requests only: another
/// migrated Ingress sending to that Service changes behaviour.
pub fn report_shared_policies(migrated: &[Migrated<'_>], report: &mut Report) {
    let services = |part: &Migrated<'_>| -> BTreeSet<String> {
        let rules = part.rules.iter().chain(part.default_backend.iter());
        let targets = rules
            .flat_map(|r| std::iter::once(&r.target).chain(r.canary.as_ref().map(|c| &c.target)));
        targets
            .filter_map(|t| match t {
                Target::Service { name, .. } => Some(name.clone()),
                Target::Unresolved => None,
            })
            .collect()
    };
    for part in migrated {
        for service in &part.extras.policy_services {
            for other in migrated.iter().filter(|o| o.key != part.key) {
                if other.key.namespace == part.key.namespace && services(other).contains(service) {
                    report.lost(
                        part.key,
                        "load-balancer / proxy-connect-timeout",
                        format!(
                            "Service {service} is also a backend of Ingress {}, whose requests get this CoxswainBackendPolicy too (the annotation applied to this Ingress only)",
                            other.key
                        ),
                    );
                }
            }
        }
    }
}
