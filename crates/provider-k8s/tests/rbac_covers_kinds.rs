//! The rendered install manifest grants exactly what the controller needs
//! for every kind of the kinds table: list and watch of each kind, and
//! status updates of each kind the translator writes status for. Adding a
//! kind without RBAC fails here, not on a cluster.

use coxswain_api::{ApiObject, Kind, KindVisitor, Object};
use serde_yaml_ng::Value;

/// (API group, resource plural) of a kind.
struct GroupPlural;

impl KindVisitor for GroupPlural {
    type Output = (String, String);
    fn visit<T: ApiObject>(self, _: Kind, _: fn(T) -> Object) -> Self::Output {
        (T::group(&()).into_owned(), T::plural(&()).into_owned())
    }
}

fn cluster_role_rules() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/install.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|doc| doc["kind"] == "ClusterRole")
        .and_then(|role| role["rules"].as_sequence().cloned())
        .expect("a ClusterRole with rules in deploy/install.yaml")
}

fn allows(rules: &[Value], group: &str, resource: &str, verb: &str) -> bool {
    let has = |v: &Value, want: &str| {
        v.as_sequence()
            .is_some_and(|items| items.iter().any(|i| i.as_str() == Some(want)))
    };
    rules.iter().any(|r| {
        has(&r["apiGroups"], group) && has(&r["resources"], resource) && has(&r["verbs"], verb)
    })
}

#[test]
fn every_kind_is_listed_and_watched() {
    let rules = cluster_role_rules();
    for kind in Kind::ALL {
        let (group, plural) = kind.visit(GroupPlural);
        for verb in ["list", "watch"] {
            assert!(
                allows(&rules, &group, &plural, verb),
                "{verb} {group}/{plural}"
            );
        }
    }
}

#[test]
fn every_kind_with_status_may_update_it() {
    let rules = cluster_role_rules();
    for kind in Kind::ALL {
        let writes_status = matches!(
            kind,
            Kind::GatewayClass
                | Kind::Gateway
                | Kind::ListenerSet
                | Kind::BackendTlsPolicy
                | Kind::CoxswainBackendPolicy
                | Kind::XBackendTrafficPolicy
                | Kind::BasicAuth
                | Kind::ClientTrafficPolicy
                | Kind::Compression
                | Kind::CoxswainExternalAuth
                | Kind::IpAccessControl
                | Kind::JwtAuth
                | Kind::PathRewriteRegex
                | Kind::RateLimit
                | Kind::RequestSizeLimit
                | Kind::Ingress
        ) || coxswain_translate::route_kind(*kind).is_some();
        let (group, plural) = kind.visit(GroupPlural);
        let status = format!("{plural}/status");
        assert_eq!(
            allows(&rules, &group, &status, "update"),
            writes_status,
            "update {group}/{status}"
        );
    }
}

/// The default install (no dedicated pools) writes no Gateway: the
/// deployment-model labels (`gateway_labels.rs`, a `patch`) come with
/// `dedicatedPools.enabled` only, and a patch could reach the spec.
#[test]
fn default_install_writes_no_gateway() {
    let rules = cluster_role_rules();
    let group = "gateway.networking.k8s.io";
    for verb in ["create", "update", "patch", "delete"] {
        assert!(!allows(&rules, group, "gateways", verb), "{verb} gateways");
    }
}
