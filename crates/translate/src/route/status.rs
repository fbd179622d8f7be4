//! Route status. Every route kind's status has the same shape (a list of
//! parent entries with conditions), so one type serves them all.
//!
//! It is held compact, because the translator keeps one per route for as
//! long as the route is unchanged (thousands of them): typed conditions
//! whose strings are mostly static, one stamp per parent, the controller
//! name shared. It becomes the Kubernetes type ([`RouteStatus::to_api`])
//! only where it is written or printed, and serialises exactly as each
//! kind's `status`.

use std::sync::Arc;

use coxswain_api::gw::httproutes::{
    HttpRouteStatus, HttpRouteStatusParents, HttpRouteStatusParentsParentRef,
};
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::Options;
use crate::conditions::{Cond, ConditionType, Reason, Stamp};
use crate::route::CompiledRoute;
use crate::route::object::ParentRef;

/// `status` of a route of any kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RouteStatus {
    pub parents: Vec<ParentStatus>,
}

/// The status entry for one parentRef.
#[derive(Clone, Debug, PartialEq)]
pub struct ParentStatus {
    /// The parentRef as the route wrote it (defaults filled in when
    /// rendered).
    pub parent_ref: ParentRef,
    pub conditions: Vec<Cond>,
    /// The route's generation these conditions observed.
    pub generation: Option<i64>,
    /// `lastTransitionTime` of every condition.
    pub since: Time,
    pub controller_name: Arc<str>,
}

/// The status entry for one parentRef, with its Accepted outcome.
pub fn parent_status(
    route: &CompiledRoute,
    parent: &ParentRef,
    accepted: Cond,
    options: &Options,
) -> ParentStatus {
    let resolved = match &route.unresolved {
        None => Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        ),
        Some((reason, message)) => {
            Cond::new(ConditionType::ResolvedRefs, false, *reason, message.clone())
        }
    };
    let mut conditions = vec![accepted, resolved];
    if route.unusable().is_none() && !route.rule_errors.is_empty() {
        conditions.push(Cond::new(
            ConditionType::PartiallyInvalid,
            true,
            route.rule_errors_reason(),
            format!("dropped invalid rules: {}", route.rule_errors_message()),
        ));
    }
    conditions.shrink_to_fit();
    ParentStatus {
        parent_ref: parent.clone(),
        conditions,
        generation: route.generation,
        since: options.now.clone(),
        controller_name: options.controller_name.clone(),
    }
}

impl ParentStatus {
    /// True when every condition of one of these types is True.
    pub fn all_true(&self, types: &[ConditionType]) -> bool {
        self.conditions
            .iter()
            .filter(|c| types.contains(&c.type_))
            .all(|c| c.status)
    }

    /// The Kubernetes form of this entry.
    pub fn to_api(&self) -> HttpRouteStatusParents {
        let stamp = Stamp {
            generation: self.generation,
            now: &self.since,
        };
        let parent = &self.parent_ref;
        HttpRouteStatusParents {
            conditions: stamp.all(self.conditions.clone()),
            controller_name: self.controller_name.to_string(),
            // Group and kind are written out even when the parentRef left
            // them to their defaults.
            parent_ref: HttpRouteStatusParentsParentRef {
                group: Some(parent.group().to_string()),
                kind: Some(parent.kind().to_string()),
                name: parent.name.clone(),
                namespace: parent.namespace.clone(),
                port: parent.port,
                section_name: parent.section_name.clone(),
            },
        }
    }
}

impl RouteStatus {
    /// The Kubernetes form: what is written to any route kind's `status`
    /// (they share this shape).
    pub fn to_api(&self) -> HttpRouteStatus {
        HttpRouteStatus {
            parents: self.parents.iter().map(ParentStatus::to_api).collect(),
        }
    }
}

impl serde::Serialize for RouteStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_api().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use coxswain_api::GATEWAY_GROUP;

    use super::*;

    #[test]
    fn renders_the_defaults_a_parent_ref_left_out() {
        let status = RouteStatus {
            parents: vec![ParentStatus {
                parent_ref: ParentRef {
                    group: None,
                    kind: None,
                    namespace: None,
                    name: "gw".into(),
                    section_name: Some("http".into()),
                    port: None,
                },
                conditions: vec![Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    "route is accepted",
                )],
                generation: Some(3),
                since: Time(Default::default()),
                controller_name: "example.com/c".into(),
            }],
        };
        let json = serde_json::to_value(&status).unwrap();
        let parent = &json["parents"][0];
        assert_eq!(parent["parentRef"]["group"], GATEWAY_GROUP);
        assert_eq!(parent["parentRef"]["kind"], "Gateway");
        assert_eq!(parent["parentRef"]["sectionName"], "http");
        assert_eq!(parent["controllerName"], "example.com/c");
        let accepted = &parent["conditions"][0];
        assert_eq!(accepted["type"], "Accepted");
        assert_eq!(accepted["status"], "True");
        assert_eq!(accepted["reason"], "Accepted");
        assert_eq!(accepted["observedGeneration"], 3);
    }
}
