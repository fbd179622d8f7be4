use std::sync::Arc;

use coxswain_api::{GatewayClass, Object};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn gateway(name: &str, class: &str, labels: serde_json::Value) -> Object {
    Object::Gateway(Arc::new(
        serde_json::from_value::<Gateway>(json!({
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7",
                         "labels": labels},
            "spec": {"gatewayClassName": class,
                     "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
        }))
        .unwrap(),
    ))
}

fn class(name: &str, controller: &str) -> Object {
    Object::GatewayClass(Arc::new(
        serde_json::from_value::<GatewayClass>(json!({
            "metadata": {"name": name}, "spec": {"controllerName": controller}
        }))
        .unwrap(),
    ))
}

fn accepted(status: &str) -> GatewayStatus {
    serde_json::from_value(json!({"conditions": [{
        "type": "Accepted", "status": status, "reason": "Accepted", "message": "",
        "lastTransitionTime": "2024-01-01T00:00:00Z"
    }]}))
    .unwrap()
}

#[test]
fn keys_are_under_the_crd_group() {
    for key in LABEL_KEYS {
        assert!(key.starts_with(&format!("{}/", coxswain_api::crds::GROUP)));
    }
}

#[test]
fn shared_has_no_pool_dedicated_names_its_deployment() {
    assert_eq!(
        model_labels(None),
        labels(&[("gateway.coxswain-labs.dev/deployment-model", "shared")])
    );
    assert_eq!(
        model_labels(Some("web-coxswain")),
        labels(&[
            ("gateway.coxswain-labs.dev/deployment-model", "dedicated"),
            ("gateway.coxswain-labs.dev/pool", "web-coxswain"),
        ])
    );
}

#[test]
fn only_our_keys_are_compared() {
    let shared = model_labels(None);
    let mut live = shared.clone();
    live.insert("team".into(), "payments".into());
    assert!(!needs_write(Some(&live), &shared), "user labels ignored");
    assert!(needs_write(None, &shared));
    assert!(needs_write(Some(&labels(&[("team", "x")])), &shared));
    // Back to shared: the pool key must go.
    let dedicated = model_labels(Some("web-coxswain"));
    assert!(needs_write(Some(&dedicated), &shared));
    assert!(needs_write(Some(&shared), &dedicated));
    // Removal: due only while one of our keys is there.
    assert!(needs_write(Some(&shared), &BTreeMap::new()));
    assert!(!needs_write(
        Some(&labels(&[("team", "x")])),
        &BTreeMap::new()
    ));
    assert!(!needs_write(None, &BTreeMap::new()));
}

#[test]
fn apply_body_carries_only_identity_and_our_labels() {
    let key = ObjectKey::new("ns", "web");
    assert_eq!(
        apply_body(&key, &model_labels(Some("web-coxswain"))),
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "web", "namespace": "ns", "labels": {
                "gateway.coxswain-labs.dev/deployment-model": "dedicated",
                "gateway.coxswain-labs.dev/pool": "web-coxswain",
            }},
        })
    );
    // A removal owns nothing: no labels field at all.
    assert_eq!(
        apply_body(&key, &BTreeMap::new()),
        json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": "web", "namespace": "ns"},
        })
    );
}

/// Classes: `ours` (served), `sibling` (ours, another instance's filter),
/// `theirs` (another controller).
fn snapshot(gateways: Vec<Object>) -> Snapshot {
    let mut s = Snapshot::default();
    for object in [
        class("ours", "me"),
        class("sibling", "me"),
        class("theirs", "other"),
    ] {
        s.insert(object);
    }
    for object in gateways {
        s.insert(object);
    }
    s
}

fn planned(
    snapshot: &Snapshot,
    statuses: &[(&str, &str)],
) -> Vec<(String, BTreeMap<String, String>)> {
    let statuses = statuses
        .iter()
        .map(|(name, status)| (ObjectKey::new("ns", *name), accepted(status)))
        .collect();
    let ours = BTreeSet::from(["ours".to_string()]);
    plan(snapshot, &ours, "me", &statuses, |key| &*key.name == "big")
        .into_iter()
        .map(|a| (a.gateway.name.to_string(), a.labels))
        .collect()
}

#[test]
fn plan_labels_accepted_gateways_of_ours_by_model() {
    let s = snapshot(vec![
        gateway("web", "ours", json!({"team": "a"})),
        gateway("big", "ours", json!(null)),
        // Already labelled: nothing to write.
        gateway(
            "done",
            "ours",
            json!({"gateway.coxswain-labs.dev/deployment-model": "shared", "team": "b"}),
        ),
    ]);
    let statuses = [("web", "True"), ("big", "True"), ("done", "True")];
    assert_eq!(
        planned(&s, &statuses),
        vec![
            ("big".to_string(), model_labels(Some("big-coxswain"))),
            ("web".to_string(), model_labels(None)),
        ]
    );
}

#[test]
fn plan_removes_ours_from_gateways_not_served() {
    let ours = json!({"gateway.coxswain-labs.dev/deployment-model": "shared"});
    let s = snapshot(vec![
        gateway("rejected", "ours", ours.clone()),
        gateway("moved", "theirs", ours.clone()),
        gateway("gone-class", "nowhere", ours.clone()),
        // Another instance of ours labels it: left alone.
        gateway("sibling", "sibling", ours.clone()),
        // Never labelled by us: nothing to remove.
        gateway("plain", "theirs", json!({"team": "a"})),
        gateway("pending", "ours", json!(null)),
    ]);
    let removed = |name: &str| (name.to_string(), BTreeMap::new());
    assert_eq!(
        planned(&s, &[("rejected", "False")]),
        vec![removed("gone-class"), removed("moved"), removed("rejected")]
    );
}

fn apply(labels: BTreeMap<String, String>, version: &str, class: &str) -> LabelApply {
    LabelApply {
        gateway: ObjectKey::new("ns", "web"),
        labels,
        resource_version: Some(version.into()),
        class: class.into(),
    }
}

#[test]
fn memory_skips_what_the_watch_has_not_shown_yet() {
    let mut memory = Memory::default();
    let shared = apply(model_labels(None), "1", "ours");
    assert!(memory.due(&shared));
    memory.done(&shared);
    assert!(!memory.due(&shared), "same version, same labels");
    assert!(
        memory.due(&apply(model_labels(None), "2", "ours")),
        "changed since"
    );
    assert!(memory.due(&apply(model_labels(Some("web-coxswain")), "1", "ours")));
}

#[test]
fn memory_removes_once_per_class_until_labelled_again() {
    let mut memory = Memory::default();
    let removal = apply(BTreeMap::new(), "1", "theirs");
    memory.done(&removal);
    // Another controller's instance put them back: not fought over.
    assert!(!memory.due(&apply(BTreeMap::new(), "5", "theirs")));
    assert!(memory.due(&apply(BTreeMap::new(), "5", "elsewhere")));
    // Ours again, then moved away again: removed again.
    memory.done(&apply(model_labels(None), "6", "ours"));
    assert!(memory.due(&apply(BTreeMap::new(), "7", "theirs")));
    // Deleted Gateways are forgotten.
    memory.done(&removal);
    memory.retain(|_| false);
    assert!(memory.due(&removal));
}
