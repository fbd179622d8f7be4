use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::gw::httproutes::HttpRouteStatus;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const OURS: &str = "coxswain-labs.dev/gateway-controller";

fn cond(kind: &str, status: &str, reason: &str, gen_: i64, time: &str) -> Condition {
    serde_json::from_value(json!({
        "type": kind, "status": status, "reason": reason, "message": "m",
        "observedGeneration": gen_, "lastTransitionTime": time
    }))
    .unwrap()
}

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2025-06-01T00:00:00Z";

fn time(c: &Condition) -> String {
    serde_json::to_value(&c.last_transition_time)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn unchanged_conditions_keep_their_transition_time() {
    let live = vec![cond("Accepted", "True", "Accepted", 1, T0)];
    let desired = vec![cond("Accepted", "True", "Accepted", 1, T1)];
    let merged = merge_conditions(&live, desired);
    assert_eq!(time(&merged[0]), T0);
}

#[test]
fn message_only_changes_keep_the_time_but_are_written() {
    let live = vec![cond("Accepted", "True", "Accepted", 1, T0)];
    let mut desired = vec![cond("Accepted", "True", "Accepted", 1, T1)];
    desired[0].message = "new message".into();
    let merged = merge_conditions(&live, desired);
    assert_eq!(time(&merged[0]), T0);
    let live_status = GatewayStatus {
        conditions: Some(live),
        ..Default::default()
    };
    let merged_status = GatewayStatus {
        conditions: Some(merged),
        ..Default::default()
    };
    assert!(!same_ignoring_times(Some(&live_status), &merged_status));
}

#[test]
fn real_transitions_take_the_new_time() {
    let live = vec![
        cond("Accepted", "True", "Accepted", 1, T0),
        cond("Programmed", "True", "Programmed", 1, T0),
        cond("ResolvedRefs", "True", "ResolvedRefs", 1, T0),
    ];
    let desired = vec![
        cond("Accepted", "False", "Accepted", 1, T1),
        cond("Programmed", "True", "Invalid", 1, T1),
        cond("ResolvedRefs", "True", "ResolvedRefs", 2, T1),
        cond("Conflicted", "False", "NoConflicts", 1, T1),
    ];
    let merged = merge_conditions(&live, desired);
    assert!(merged.iter().all(|c| time(c) == T1));
}

#[test]
fn no_op_detection_ignores_only_timestamps() {
    let live = GatewayStatus {
        conditions: Some(vec![cond("Accepted", "True", "Accepted", 1, T0)]),
        ..Default::default()
    };
    let same = GatewayStatus {
        conditions: Some(vec![cond("Accepted", "True", "Accepted", 1, T1)]),
        ..Default::default()
    };
    assert!(same_ignoring_times(Some(&live), &same));
    let newer_generation = GatewayStatus {
        conditions: Some(vec![cond("Accepted", "True", "Accepted", 2, T0)]),
        ..Default::default()
    };
    assert!(!same_ignoring_times(Some(&live), &newer_generation));
    assert!(!same_ignoring_times(None, &same));
}

#[test]
fn gateway_listener_conditions_are_merged_by_listener_name() {
    let status = |time: &str, reason: &str| -> GatewayStatus {
        serde_json::from_value(json!({
            "conditions": [cond("Accepted", "True", "Accepted", 3, time)],
            "listeners": [
                {"name": "http", "attachedRoutes": 1, "supportedKinds": [],
                 "conditions": [cond("Programmed", "True", reason, 3, time)]}
            ]
        }))
        .unwrap()
    };
    let merged = merge_gateway(Some(&status(T0, "Programmed")), status(T1, "Programmed"));
    assert_eq!(merged, status(T0, "Programmed"));
    let changed = merge_gateway(Some(&status(T0, "Programmed")), status(T1, "Invalid"));
    let listener = &changed.listeners.as_ref().unwrap()[0];
    assert_eq!(time(&listener.conditions[0]), T1);
    assert_eq!(time(&changed.conditions.as_ref().unwrap()[0]), T0);
}

fn parent(controller: &str, gateway: &str, reason: &str, time: &str) -> serde_json::Value {
    json!({
        "controllerName": controller,
        "parentRef": {"name": gateway},
        "conditions": [cond("Accepted", "True", reason, 1, time)]
    })
}

fn route(parents: Vec<serde_json::Value>) -> HttpRouteStatus {
    serde_json::from_value(json!({ "parents": parents })).unwrap()
}

#[test]
fn other_controllers_parents_are_kept_in_place() {
    let live = route(vec![
        parent("example.com/other", "a", "Accepted", T0),
        parent(OURS, "b", "Accepted", T0),
        parent(OURS, "gone", "Accepted", T0),
    ]);
    let desired = route(vec![
        parent(OURS, "c", "Accepted", T1),
        parent(OURS, "b", "Accepted", T1),
    ]);
    let merged = merge_route(Some(&live), desired, OURS);
    let expected = route(vec![
        parent("example.com/other", "a", "Accepted", T0),
        parent(OURS, "b", "Accepted", T0),
        parent(OURS, "c", "Accepted", T1),
    ]);
    assert_eq!(merged, expected);
}

#[test]
fn route_no_op_when_only_times_differ() {
    let live = route(vec![
        parent("example.com/other", "a", "Accepted", T0),
        parent(OURS, "b", "Accepted", T0),
    ]);
    let desired = route(vec![parent(OURS, "b", "Accepted", T1)]);
    let merged = merge_route(Some(&live), desired, OURS);
    assert_eq!(merged, live);
    assert!(same_ignoring_times(Some(&live), &merged));
}

#[test]
fn first_status_of_a_route() {
    let desired = route(vec![parent(OURS, "b", "Accepted", T1)]);
    let merged = merge_route(None, desired.clone(), OURS);
    assert_eq!(merged, desired);
    assert!(!same_ignoring_times(None, &merged));
}

fn ancestor(controller: &str, gateway: &str, reason: &str, time: &str) -> serde_json::Value {
    json!({
        "ancestorRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway, "namespace": "ns"},
        "controllerName": controller,
        "conditions": [cond("Accepted", "True", reason, 1, time)],
    })
}

fn policy(ancestors: Vec<serde_json::Value>) -> BackendTlsPolicyStatus {
    serde_json::from_value(json!({ "ancestors": ancestors })).unwrap()
}

#[test]
fn policy_ancestors_of_other_controllers_stay_and_ours_are_replaced() {
    let live = policy(vec![
        ancestor("other.io/gw", "theirs", "Accepted", T0),
        ancestor(OURS, "gone", "Accepted", T0),
        ancestor(OURS, "kept", "Accepted", T0),
    ]);
    let desired = policy(vec![
        ancestor(OURS, "kept", "Accepted", T1),
        ancestor(OURS, "new", "Accepted", T1),
    ]);
    let merged = merge_backend_tls_policy(Some(&live), desired, OURS);
    let names: Vec<&str> = merged
        .ancestors
        .iter()
        .map(|a| a.ancestor_ref.name.as_str())
        .collect();
    assert_eq!(names, ["theirs", "kept", "new"]);
    assert_eq!(
        time(&merged.ancestors[1].conditions[0]),
        T0,
        "unchanged keeps its time"
    );
}

#[test]
fn policy_ancestors_are_cut_to_the_api_limit_keeping_others_first() {
    let live = policy(vec![ancestor("other.io/gw", "theirs", "Accepted", T0)]);
    let desired = policy(
        (0..20)
            .map(|i| ancestor(OURS, &format!("gw{i}"), "Accepted", T1))
            .collect(),
    );
    let merged = merge_backend_tls_policy(Some(&live), desired, OURS);
    assert_eq!(merged.ancestors.len(), MAX_ANCESTORS);
    assert_eq!(merged.ancestors[0].ancestor_ref.name, "theirs");
}
