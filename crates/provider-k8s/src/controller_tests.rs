use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::{Gateway, GatewayClass, Object, ObjectKey};
use serde_json::json;

use super::*;
use crate::store::Change;
use coxswain_api::Kind;

fn store() -> Store {
    let mut store = Store::default();
    for kind in Kind::ALL.iter().copied() {
        store.apply(Change::Replace(kind, vec![]));
    }
    for (name, controller) in [("ours", "me"), ("filtered", "me"), ("theirs", "other")] {
        store.apply(Change::Apply(Object::GatewayClass(Arc::new(
            serde_json::from_value::<GatewayClass>(json!({
                "metadata": {"name": name}, "spec": {"controllerName": controller}
            }))
            .unwrap(),
        ))));
    }
    for (name, class) in [
        ("a", "ours"),
        ("b", "ours"),
        ("c", "theirs"),
        ("d", "filtered"),
    ] {
        store.apply(Change::Apply(Object::Gateway(Arc::new(
            serde_json::from_value::<Gateway>(json!({
                "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
                "spec": {"gatewayClassName": class,
                         "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}
            }))
            .unwrap(),
        ))));
    }
    store
}

fn config(addresses: AddressMode) -> ControllerConfig {
    ControllerConfig {
        controller_name: "me".into(),
        gateway_class_name: Some("ours".into()),
        default_address: [0, 0, 0, 0].into(),
        addresses,
        lease: LeaseConfig {
            namespace: "ns".into(),
            name: "lease".into(),
            identity: "me-1".into(),
        },
    }
}

#[test]
fn pool_mode_gives_each_gateway_its_own_socket() {
    let pool = "127.0.10.0/24".parse().unwrap();
    let (output, job) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &store(),
        &config(AddressMode::Pool(pool)),
        Timestamp::UNIX_EPOCH,
    );
    let sockets: Vec<String> = output
        .ir
        .sockets
        .iter()
        .map(|l| format!("{}:{}", l.address, l.port))
        .collect();
    assert_eq!(sockets, ["127.0.10.1:8080", "127.0.10.2:8080"]);
    let keys: Vec<&ObjectKey> = job.statuses.gateways.keys().collect();
    assert_eq!(
        keys,
        [&ObjectKey::new("ns", "a"), &ObjectKey::new("ns", "b")]
    );
    let classes: Vec<&ObjectKey> = job.statuses.gateway_classes.keys().collect();
    assert_eq!(
        classes,
        [&ObjectKey::cluster("ours")],
        "class filter and other controllers"
    );
    assert!(job.services.is_empty());
    assert_eq!(
        job.service_accounts.len(),
        2,
        "every Gateway gets its identity ServiceAccount in pool mode too"
    );
}

#[test]
fn load_balancer_mode_wants_a_service_per_gateway() {
    let selector: BTreeMap<String, String> = [("app".to_string(), "cx".to_string())].into();
    let mode = AddressMode::LoadBalancer {
        proxy_selector: selector,
    };
    let (output, job) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &store(),
        &config(mode),
        Timestamp::UNIX_EPOCH,
    );
    let names: Vec<_> = job
        .services
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a-coxswain", "b-coxswain"]);
    assert_eq!(job.service_accounts.len(), 2);
    let a = &output.statuses.gateways[&ObjectKey::new("ns", "a")];
    assert!(a.addresses.is_none(), "no load balancer address yet");
    assert_eq!(output.ir.sockets.len(), 1, "both share 0.0.0.0:8080");
}
