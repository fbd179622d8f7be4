//! ReferenceGrant: may an object in one namespace refer to an object in another?

use coxswain_api::{ObjectKey, ReferenceGrant};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The referring side of a cross-namespace reference.
#[derive(Clone, Copy, Debug)]
pub struct From<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
}

/// The referenced object.
#[derive(Clone, Copy, Debug)]
pub struct To<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// True when the reference stays in its namespace, or a ReferenceGrant in the
/// target namespace allows it.
pub fn is_permitted(
    grants: &BTreeMap<ObjectKey, Arc<ReferenceGrant>>,
    from: From<'_>,
    to: To<'_>,
) -> bool {
    if from.namespace == to.namespace {
        return true;
    }
    let in_target_ns = grants
        .range(ObjectKey::new(to.namespace, "")..)
        .take_while(|(k, _)| *k.namespace == *to.namespace);
    in_target_ns.into_iter().any(|(_, grant)| {
        let from_ok =
            grant.spec.from.iter().any(|f| {
                f.group == from.group && f.kind == from.kind && f.namespace == from.namespace
            });
        let to_ok = grant.spec.to.iter().any(|t| {
            t.group == to.group
                && t.kind == to.kind
                && t.name
                    .as_deref()
                    .is_none_or(|n| n.is_empty() || n == to.name)
        });
        from_ok && to_ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_api::gw::referencegrants::{
        ReferenceGrantFrom, ReferenceGrantSpec, ReferenceGrantTo,
    };
    use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn grant(
        ns: &str,
        from_ns: &str,
        to_name: Option<&str>,
    ) -> BTreeMap<ObjectKey, Arc<ReferenceGrant>> {
        let g = ReferenceGrant {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some("g".into()),
                ..Default::default()
            },
            spec: ReferenceGrantSpec {
                from: vec![ReferenceGrantFrom {
                    group: "gateway.networking.k8s.io".into(),
                    kind: "HTTPRoute".into(),
                    namespace: from_ns.into(),
                }],
                to: vec![ReferenceGrantTo {
                    group: "".into(),
                    kind: "Service".into(),
                    name: to_name.map(Into::into),
                }],
            },
        };
        BTreeMap::from([(ObjectKey::new(ns, "g"), Arc::new(g))])
    }

    fn route_from(ns: &str) -> From<'_> {
        From {
            group: "gateway.networking.k8s.io",
            kind: "HTTPRoute",
            namespace: ns,
        }
    }

    fn service<'a>(ns: &'a str, name: &'a str) -> To<'a> {
        To {
            group: "",
            kind: "Service",
            namespace: ns,
            name,
        }
    }

    #[test]
    fn same_namespace_needs_no_grant() {
        assert!(is_permitted(
            &BTreeMap::new(),
            route_from("a"),
            service("a", "s")
        ));
    }

    #[test]
    fn cross_namespace_needs_a_matching_grant() {
        assert!(!is_permitted(
            &BTreeMap::new(),
            route_from("a"),
            service("b", "s")
        ));
        let any = grant("b", "a", None);
        assert!(is_permitted(&any, route_from("a"), service("b", "s")));
        assert!(!is_permitted(&any, route_from("c"), service("b", "s")));
        let named = grant("b", "a", Some("only"));
        assert!(is_permitted(&named, route_from("a"), service("b", "only")));
        assert!(!is_permitted(&named, route_from("a"), service("b", "s")));
    }

    #[test]
    fn grant_must_live_in_the_target_namespace() {
        let wrong_place = grant("a", "a", None);
        assert!(!is_permitted(
            &wrong_place,
            route_from("a"),
            service("b", "s")
        ));
    }
}
