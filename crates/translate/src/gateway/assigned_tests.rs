//! Provider-assigned bind addresses (`translate_with_addresses`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{Gateway, GatewayClass, Object, ObjectKey, Snapshot};
use serde_json::json;

use crate::{AssignedAddresses, DEFAULT_CONTROLLER_NAME, Options, translate_with_addresses};

fn options() -> Options {
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [0, 0, 0, 0].into(),
        now: Time(Timestamp::UNIX_EPOCH),
        ingress: Default::default(),
        dedicated_pools: false,
    }
}

fn snapshot(gateways: &[(&str, serde_json::Value)]) -> Snapshot {
    let mut s = Snapshot::default();
    s.insert(Object::GatewayClass(Arc::new(
        serde_json::from_value::<GatewayClass>(json!({
            "metadata": {"name": "c"},
            "spec": {"controllerName": DEFAULT_CONTROLLER_NAME}
        }))
        .unwrap(),
    )));
    for (name, addresses) in gateways {
        s.insert(Object::Gateway(Arc::new(
            serde_json::from_value::<Gateway>(json!({
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"gatewayClassName": "c", "addresses": addresses,
                         "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
            }))
            .unwrap(),
        )));
    }
    s
}

fn condition(out: &crate::Output, gw: &str, kind: &str) -> (String, String) {
    let status = &out.statuses.gateways[&ObjectKey::new("default", gw)];
    let c = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .unwrap();
    (c.status.clone(), c.reason.clone())
}

#[test]
fn assigned_addresses_isolate_gateways_on_one_port() {
    let s = snapshot(&[("a", json!([])), ("b", json!([]))]);
    let a: IpAddr = "127.0.0.2".parse().unwrap();
    let b: IpAddr = "127.0.0.3".parse().unwrap();
    let assigned: BTreeMap<ObjectKey, AssignedAddresses> = [
        (ObjectKey::new("default", "a"), Ok(vec![a])),
        (ObjectKey::new("default", "b"), Ok(vec![b])),
    ]
    .into();
    let out = translate_with_addresses(&s, &options(), &assigned);
    let bound: Vec<(IpAddr, u16)> = out.ir.sockets.iter().map(|s| (s.address, s.port)).collect();
    assert_eq!(bound, vec![(a, 80), (b, 80)]);
    let status = &out.statuses.gateways[&ObjectKey::new("default", "a")];
    let addresses = status.addresses.as_ref().unwrap();
    assert_eq!(addresses[0].value, "127.0.0.2");
    assert_eq!(
        condition(&out, "a", "Programmed"),
        ("True".into(), "Programmed".into())
    );
}

#[test]
fn unusable_assignment_is_not_programmed_and_not_served() {
    let s = snapshot(&[("a", json!([{"type": "IPAddress", "value": "192.0.2.1"}]))]);
    let assigned: BTreeMap<ObjectKey, AssignedAddresses> = [(
        ObjectKey::new("default", "a"),
        Err("outside the pool".to_string()),
    )]
    .into();
    let out = translate_with_addresses(&s, &options(), &assigned);
    assert!(out.ir.sockets.is_empty());
    assert_eq!(
        condition(&out, "a", "Accepted"),
        ("True".into(), "Accepted".into())
    );
    assert_eq!(
        condition(&out, "a", "Programmed"),
        ("False".into(), "AddressNotUsable".into())
    );
}

#[test]
fn unsupported_address_types_win_over_assignments() {
    let s = snapshot(&[("a", json!([{"type": "Hostname", "value": "example.com"}]))]);
    let assigned: BTreeMap<ObjectKey, AssignedAddresses> = [(
        ObjectKey::new("default", "a"),
        Ok(vec!["127.0.0.2".parse().unwrap()]),
    )]
    .into();
    let out = translate_with_addresses(&s, &options(), &assigned);
    assert_eq!(
        condition(&out, "a", "Accepted"),
        ("False".into(), "UnsupportedAddress".into())
    );
}
