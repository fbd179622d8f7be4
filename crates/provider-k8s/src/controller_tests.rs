use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::{Gateway, GatewayClass, Object, ObjectKey};
use serde_json::json;

use super::*;
use crate::store::Change;
use coxswain_api::Kind;

fn store() -> Store {
    let mut store = store_of(&["a", "b"]);
    store.apply(Change::Apply(gateway("c", "theirs")));
    store.apply(Change::Apply(gateway("d", "filtered")));
    store
}

/// Our three classes and a Gateway of class `ours` per name.
fn store_of(ours: &[&str]) -> Store {
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
    for name in ours {
        store.apply(Change::Apply(gateway(name, "ours")));
    }
    store
}

fn gateway(name: &str, class: &str) -> Object {
    Object::Gateway(Arc::new(
        serde_json::from_value::<Gateway>(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"gatewayClassName": class,
                     "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}
        }))
        .unwrap(),
    ))
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
        ingress: Default::default(),
        pools: None,
    }
}

#[test]
fn pool_mode_gives_each_gateway_its_own_socket() {
    let pool = "127.0.10.0/24".parse().unwrap();
    let (output, job, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut AddressMemory::new(),
        &store(),
        &config(AddressMode::Pool(pool)),
        None,
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
    // Without pools nothing is labelled: the default RBAC writes no Gateway.
    assert!(job.gateway_labels.is_empty());
}

/// With pools on, ours are labelled shared; `c` (another controller's) and
/// `d` (our controller's class left to another instance) carry none to
/// remove.
#[test]
fn pools_on_labels_each_gateway_of_ours_with_its_model() {
    let mut config = config(AddressMode::Pool("127.0.10.0/24".parse().unwrap()));
    config.pools = Some(crate::pool::PoolSettings {
        image: "coxswain:test".into(),
        stream_endpoint: "stream.test:9902".into(),
        stream_server_name: "stream.test".into(),
    });
    let (_, job, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut AddressMemory::new(),
        &store(),
        &config,
        None,
        Timestamp::UNIX_EPOCH,
    );
    let labelled: Vec<(&str, &str)> = job
        .gateway_labels
        .iter()
        .map(|a| {
            (
                &*a.gateway.name,
                a.labels[crate::labels::DEPLOYMENT_MODEL_LABEL].as_str(),
            )
        })
        .collect();
    assert_eq!(labelled, [("a", "shared"), ("b", "shared")]);
}

/// A Gateway keeps the address it was given even before its status (which
/// records it) comes back through the watch, when a Gateway that sorts first
/// is created meanwhile.
#[test]
fn pool_addresses_stay_put_before_status_is_seen() {
    let pool = "127.0.10.0/24".parse().unwrap();
    let config = config(AddressMode::Pool(pool));
    let mut translator = coxswain_translate::Translator::new();
    let mut memory = AddressMemory::new();
    let address =
        |memory: &AddressMemory, name: &str| memory[&ObjectKey::new("ns", name)].clone().unwrap();
    let now = Timestamp::UNIX_EPOCH;
    translate_store(
        &mut translator,
        &mut memory,
        &store_of(&["b"]),
        &config,
        None,
        now,
    );
    assert_eq!(
        address(&memory, "b"),
        ["127.0.10.1".parse::<IpAddr>().unwrap()]
    );
    let both = store_of(&["a", "b"]);
    translate_store(&mut translator, &mut memory, &both, &config, None, now);
    assert_eq!(
        address(&memory, "b"),
        ["127.0.10.1".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        address(&memory, "a"),
        ["127.0.10.2".parse::<IpAddr>().unwrap()]
    );
    let fresh = &mut AddressMemory::new();
    translate_store(&mut translator, fresh, &both, &config, None, now);
    assert_eq!(
        address(fresh, "a"),
        ["127.0.10.1".parse::<IpAddr>().unwrap()],
        "without the memory (and no status yet) key order decides"
    );
}

#[test]
fn load_balancer_mode_wants_a_service_per_gateway() {
    let selector: BTreeMap<String, String> = [("app".to_string(), "cx".to_string())].into();
    let mode = AddressMode::LoadBalancer {
        proxy_selector: selector,
    };
    let (output, job, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut AddressMemory::new(),
        &store(),
        &config(mode),
        None,
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

/// A Gateway naming CoxswainGatewayParameters in pool mode.
fn dedicated_store() -> Store {
    let mut store = store_of(&["a"]);
    store.apply(Change::Apply(Object::Gateway(Arc::new(
        serde_json::from_value::<Gateway>(json!({
            "metadata": {"name": "d", "namespace": "ns", "uid": "uid-d"},
            "spec": {"gatewayClassName": "ours",
                     "infrastructure": {"parametersRef": {"group": "gateway.coxswain-labs.dev",
                         "kind": "CoxswainGatewayParameters", "name": "pool"}},
                     "listeners": [{"name": "http", "port": 8080, "protocol": "HTTP"}]}
        }))
        .unwrap(),
    ))));
    store.apply(Change::Apply(Object::CoxswainGatewayParameters(Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "pool", "namespace": "ns"},
            "spec": {"replicas": 2, "serviceType": "ClusterIP"}
        }))
        .unwrap(),
    ))));
    store
}

#[test]
fn a_dedicated_gateway_gets_its_pool_and_no_pool_address() {
    let mut config = config(AddressMode::Pool("127.0.10.0/24".parse().unwrap()));
    config.pools = Some(crate::pool::tests::settings());
    let mut memory = AddressMemory::new();
    let (output, job, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut memory,
        &dedicated_store(),
        &config,
        None,
        Timestamp::UNIX_EPOCH,
    );
    assert_eq!(output.dedicated.keys().collect::<Vec<_>>(), ["ns/d"]);
    assert_eq!(
        memory.keys().collect::<Vec<_>>(),
        [&ObjectKey::new("ns", "a")],
        "the address pool serves shared Gateways only"
    );
    let sockets: Vec<String> = output
        .ir
        .sockets
        .iter()
        .map(|l| format!("{}:{}", l.address, l.port))
        .collect();
    assert_eq!(
        sockets,
        ["0.0.0.0:8080", "127.0.10.1:8080"],
        "the pool's pods bind the wildcard"
    );
    let names = |v: Vec<Option<String>>| v.into_iter().flatten().collect::<Vec<_>>();
    assert_eq!(
        names(
            job.deployments
                .iter()
                .map(|d| d.metadata.name.clone())
                .collect()
        ),
        ["d-coxswain"]
    );
    assert_eq!(
        names(
            job.services
                .iter()
                .map(|s| s.metadata.name.clone())
                .collect()
        ),
        ["d-coxswain"]
    );
    assert_eq!(job.service_accounts.len(), 2);
    let status = &job.statuses.gateways[&ObjectKey::new("ns", "d")];
    let programmed = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Programmed")
        .unwrap();
    assert_eq!(
        (programmed.status.as_str(), programmed.reason.as_str()),
        ("False", "Pending"),
        "no Deployment yet"
    );
    assert!(status.addresses.is_none());

    // Without pool settings no pool is provisioned: the ref is refused.
    config.pools = None;
    let (output, job, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut AddressMemory::new(),
        &dedicated_store(),
        &config,
        None,
        Timestamp::UNIX_EPOCH,
    );
    assert!(output.dedicated.is_empty() && job.deployments.is_empty());
    let accepted = &job.statuses.gateways[&ObjectKey::new("ns", "d")]
        .conditions
        .as_ref()
        .unwrap()[0];
    assert_eq!(accepted.reason, "InvalidParameters");
}

#[test]
fn the_shared_proxies_drop_dedicated_gateways() {
    let mut config = config(AddressMode::Pool("127.0.10.0/24".parse().unwrap()));
    config.pools = Some(crate::pool::tests::settings());
    let (mut output, _, _) = translate_store(
        &mut coxswain_translate::Translator::new(),
        &mut AddressMemory::new(),
        &dedicated_store(),
        &config,
        None,
        Timestamp::UNIX_EPOCH,
    );
    super::drop_gateways(&mut output.ir, &output.dedicated);
    let gateways: Vec<&str> = output
        .ir
        .sockets
        .iter()
        .flat_map(|s| s.listeners.iter().map(|l| l.gateway.as_str()))
        .collect();
    assert_eq!(gateways, ["ns/a"], "only the shared Gateway is left");
}
