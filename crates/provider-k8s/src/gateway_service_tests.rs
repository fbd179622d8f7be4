use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::{Gateway, Service};
use serde_json::json;

use super::*;

fn gateway() -> Gateway {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "apps", "uid": "u-1"},
        "spec": {
            "gatewayClassName": "c",
            "infrastructure": {
                "labels": {"team": "a", MANAGED_BY_LABEL: "someone-else"},
                "annotations": {"cloud/lb-type": "nlb"}
            },
            "listeners": [
                {"name": "a", "port": 80, "protocol": "HTTP"},
                {"name": "b", "port": 80, "protocol": "HTTP", "hostname": "x.example"},
                {"name": "c", "port": 8080, "protocol": "HTTP"}
            ]
        }
    }))
    .unwrap()
}

fn selector() -> BTreeMap<String, String> {
    [("app".to_string(), "coxswain".to_string())].into()
}

#[test]
fn service_shape() {
    let svc = desired_service(&gateway(), &selector(), &BTreeSet::new()).unwrap();
    assert_eq!(svc.metadata.name.as_deref(), Some("web-coxswain"));
    assert_eq!(svc.metadata.namespace.as_deref(), Some("apps"));
    let labels = svc.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[GATEWAY_NAME_LABEL], "web");
    assert_eq!(
        labels[MANAGED_BY_LABEL], "coxswain",
        "reserved keys are ours"
    );
    assert_eq!(labels["team"], "a");
    assert_eq!(
        svc.metadata.annotations.as_ref().unwrap()["cloud/lb-type"],
        "nlb"
    );
    let owner = &svc.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Gateway", "u-1")
    );
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(spec.selector.as_ref(), Some(&selector()));
    let ports: Vec<i32> = spec.ports.iter().flatten().map(|p| p.port).collect();
    assert_eq!(ports, vec![80, 8080]);
    let sa = desired_service_account(&gateway()).unwrap();
    assert_eq!(sa.metadata.labels, svc.metadata.labels);
}

#[test]
fn unstored_gateway_gets_no_service() {
    let mut gw = gateway();
    gw.metadata.uid = None;
    assert!(desired_service(&gw, &selector(), &BTreeSet::new()).is_none());
}

#[test]
fn up_to_date_tolerates_server_defaults_and_extra_labels() {
    let desired = desired_service(&gateway(), &selector(), &BTreeSet::new()).unwrap();
    let mut live = desired.clone();
    live.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("extra".into(), "x".into());
    if let Some(spec) = live.spec.as_mut() {
        spec.cluster_ip = Some("10.96.0.10".into());
        for port in spec.ports.iter_mut().flatten() {
            port.node_port = Some(31000);
        }
    }
    assert!(service_up_to_date(&live, &desired));
    let mut drifted = live.clone();
    drifted.spec.as_mut().unwrap().selector = Some(BTreeMap::new());
    assert!(!service_up_to_date(&drifted, &desired));
}

#[test]
fn ingress_ip_and_hostname_become_addresses() {
    let svc: Service = serde_json::from_value(json!({
        "status": {"loadBalancer": {"ingress": [
            {"ip": "203.0.113.7"}, {"hostname": "lb.example"}, {}
        ]}}
    }))
    .unwrap();
    let got: Vec<(String, String)> = ingress_addresses(&svc)
        .into_iter()
        .map(|a| (a.r#type.unwrap(), a.value))
        .collect();
    assert_eq!(
        got,
        vec![
            ("IPAddress".into(), "203.0.113.7".into()),
            ("Hostname".into(), "lb.example".into())
        ]
    );
}

#[test]
fn listener_set_ports_and_udp_are_exposed() {
    let mut gw = gateway();
    gw.spec.listeners.push(
        serde_json::from_value(json!(
            {"name": "dns", "port": 53, "protocol": "UDP"}
        ))
        .unwrap(),
    );
    // A ListenerSet listener on 9443 the IR serves for this Gateway.
    let served: BTreeSet<(Transport, u16)> = [(Transport::Tcp, 80), (Transport::Tcp, 9443)].into();
    let svc = desired_service(&gw, &selector(), &served).unwrap();
    let ports: Vec<(String, i32, String)> = svc
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| (p.name.clone().unwrap(), p.port, p.protocol.clone().unwrap()))
        .collect();
    assert_eq!(
        ports,
        [
            ("port-80".to_string(), 80, "TCP".to_string()),
            ("port-8080".to_string(), 8080, "TCP".to_string()),
            ("port-9443".to_string(), 9443, "TCP".to_string()),
            ("udp-53".to_string(), 53, "UDP".to_string()),
        ]
    );
}
