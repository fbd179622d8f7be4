use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_api::gateway_api::apis::standard::listenersets::ListenerSetStatus;
use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::{CoxswainGatewayParameters, Deployment, Gateway, ListenerSet, Object, Service};
use serde_json::{Value, json};

use super::*;

fn programmed() -> Value {
    json!({"type": "Programmed", "status": "True", "reason": "Programmed", "message": "",
           "lastTransitionTime": "2024-01-01T00:00:00Z"})
}

/// A translated status: Gateway and its one listener Programmed.
fn translated() -> GatewayStatus {
    serde_json::from_value(json!({
        "addresses": [{"type": "IPAddress", "value": "0.0.0.0"}],
        "conditions": [programmed()],
        "listeners": [{"name": "http", "attachedRoutes": 0, "supportedKinds": [],
                       "conditions": [programmed()]}]
    }))
    .unwrap()
}

fn parameters(spec: Value) -> Arc<CoxswainGatewayParameters> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "pool", "namespace": "ns"}, "spec": spec
        }))
        .unwrap(),
    )
}

struct World {
    snapshot: Snapshot,
    statuses: Statuses,
    dedicated: BTreeMap<String, Arc<CoxswainGatewayParameters>>,
    feedback: BTreeMap<String, StreamFeedback>,
}

impl World {
    fn new(spec: Value, addresses: Value) -> World {
        let mut snapshot = Snapshot::default();
        snapshot.insert(Object::Gateway(Arc::new(
            serde_json::from_value::<Gateway>(json!({
                "metadata": {"name": "gw", "namespace": "ns"},
                "spec": {"gatewayClassName": "c", "addresses": addresses, "listeners": []}
            }))
            .unwrap(),
        )));
        let mut statuses = Statuses::default();
        statuses
            .gateways
            .insert(ObjectKey::new("ns", "gw"), translated());
        World {
            snapshot,
            statuses,
            dedicated: [("ns/gw".to_string(), parameters(spec))].into(),
            feedback: BTreeMap::new(),
        }
    }

    fn deployment(&mut self, generation: i64, observed: i64, ready: i32) {
        self.snapshot.insert(Object::Deployment(Arc::new(
            serde_json::from_value::<Deployment>(json!({
                "metadata": {"name": "gw-coxswain", "namespace": "ns", "generation": generation},
                "status": {"observedGeneration": observed, "readyReplicas": ready}
            }))
            .unwrap(),
        )));
    }

    fn service(&mut self, service: Value) {
        let mut service = service;
        service["metadata"] = json!({"name": "gw-coxswain", "namespace": "ns"});
        self.snapshot.insert(Object::Service(Arc::new(
            serde_json::from_value::<Service>(service).unwrap(),
        )));
    }

    fn acked(&mut self) {
        self.feedback.insert(
            "ns/gw".into(),
            StreamFeedback {
                acked: true,
                nack: None,
            },
        );
    }

    /// (Gateway reason, listener reason, Gateway message, addresses).
    fn overlay(&self) -> (String, String, String, Vec<String>) {
        let mut statuses = self.statuses.clone();
        overlay_pool_status(
            &mut statuses,
            &self.snapshot,
            &self.dedicated,
            &self.feedback,
        );
        let status = &statuses.gateways[&ObjectKey::new("ns", "gw")];
        let gateway = &status.conditions.as_ref().unwrap()[0];
        let listener = &status.listeners.as_ref().unwrap()[0].conditions[0];
        let addresses = status
            .addresses
            .iter()
            .flatten()
            .map(|a| a.value.clone())
            .collect();
        (
            gateway.reason.clone(),
            listener.reason.clone(),
            gateway.message.clone(),
            addresses,
        )
    }
}

const LB: &str = r#"{"spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.9"}}"#;

#[test]
fn programmed_only_when_ready_acknowledged_and_addressed() {
    let mut w = World::new(json!({"replicas": 2}), json!(null));
    let (reason, listener, message, addresses) = w.overlay();
    assert_eq!((reason.as_str(), listener.as_str()), ("Pending", "Pending"));
    assert_eq!(
        message,
        "waiting for Deployment ns/gw-coxswain to be created"
    );
    assert!(
        addresses.is_empty(),
        "no Service: no address, not the bind address"
    );

    w.deployment(2, 1, 1);
    assert_eq!(
        w.overlay().2,
        "waiting for Deployment ns/gw-coxswain to roll out generation 2"
    );
    w.deployment(2, 2, 0);
    assert_eq!(
        w.overlay().2,
        "waiting for 1 ready proxy of Deployment ns/gw-coxswain (0 of 2 ready)"
    );
    w.deployment(2, 2, 1);
    assert_eq!(
        w.overlay().2,
        "no proxy has acknowledged the current config yet"
    );
    w.acked();
    let (reason, listener, message, _) = w.overlay();
    assert_eq!(
        (reason.as_str(), listener.as_str()),
        ("AddressNotAssigned", "Pending")
    );
    assert_eq!(message, "waiting for an address on Service ns/gw-coxswain");

    let mut service: Value = serde_json::from_str(LB).unwrap();
    w.service(service.clone());
    assert_eq!(
        w.overlay().0,
        "AddressNotAssigned",
        "a LoadBalancer's ClusterIP is not it"
    );
    service["status"] = json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.4"}]}});
    w.service(service);
    let (reason, listener, _, addresses) = w.overlay();
    assert_eq!(
        (reason.as_str(), listener.as_str()),
        ("Programmed", "Programmed")
    );
    assert_eq!(addresses, ["203.0.113.4"]);
}

#[test]
fn a_nack_is_invalid_and_zero_replicas_never_programmed() {
    let mut w = World::new(json!({}), json!(null));
    w.deployment(1, 1, 0);
    w.feedback.insert(
        "ns/gw".into(),
        StreamFeedback {
            acked: false,
            nack: Some("listener http: port 80 in use".into()),
        },
    );
    let (reason, listener, message, _) = w.overlay();
    assert_eq!((reason.as_str(), listener.as_str()), ("Invalid", "Invalid"));
    assert_eq!(
        message,
        "proxy rejected config: listener http: port 80 in use"
    );

    let mut w = World::new(
        json!({"replicas": 0, "serviceType": "ClusterIP"}),
        json!(null),
    );
    w.deployment(1, 1, 0);
    w.acked();
    w.service(json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.9"}}));
    let (reason, _, message, addresses) = w.overlay();
    assert_eq!(reason, "Pending");
    assert!(message.starts_with("replicas is 0"), "{message}");
    assert_eq!(addresses, ["10.96.0.9"]);
}

#[test]
fn cluster_ip_and_requested_addresses() {
    let requested = json!([{"type": "IPAddress", "value": "192.0.2.10"}]);
    let mut w = World::new(json!({"serviceType": "NodePort"}), requested.clone());
    w.deployment(1, 1, 1);
    w.acked();
    w.service(
        json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.9",
                              "externalIPs": ["192.0.2.10"]}}),
    );
    let (reason, _, _, addresses) = w.overlay();
    assert_eq!(reason, "Programmed");
    assert_eq!(
        addresses,
        ["192.0.2.10"],
        "the external IPs asked for, not the ClusterIP"
    );

    let mut w = World::new(json!({}), requested);
    w.deployment(1, 1, 1);
    w.acked();
    let mut service: Value = serde_json::from_str(LB).unwrap();
    service["status"] = json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.4"}]}});
    w.service(service);
    let (reason, _, message, _) = w.overlay();
    assert_eq!(reason, "AddressNotAssigned");
    assert!(
        message.contains("requested address 192.0.2.10"),
        "{message}"
    );
}

#[test]
fn shared_gateways_and_listener_sets() {
    let mut w = World::new(json!({}), json!(null));
    w.statuses
        .gateways
        .insert(ObjectKey::new("ns", "shared"), translated());
    w.snapshot.insert(Object::ListenerSet(Arc::new(
        serde_json::from_value::<ListenerSet>(json!({
            "metadata": {"name": "set", "namespace": "team"},
            "spec": {"parentRef": {"name": "gw", "namespace": "ns"}, "listeners": []}
        }))
        .unwrap(),
    )));
    let set: ListenerSetStatus = serde_json::from_value(json!({
        "conditions": [programmed()],
        "listeners": [{"name": "l", "port": 80, "attachedRoutes": 0, "supportedKinds": [],
                       "conditions": [programmed()]}]
    }))
    .unwrap();
    w.statuses
        .listener_sets
        .insert(ObjectKey::new("team", "set"), set);
    let mut statuses = w.statuses.clone();
    overlay_pool_status(&mut statuses, &w.snapshot, &w.dedicated, &w.feedback);
    assert_eq!(
        statuses.gateways[&ObjectKey::new("ns", "shared")],
        translated(),
        "a shared Gateway is left alone"
    );
    let set = &statuses.listener_sets[&ObjectKey::new("team", "set")];
    assert_eq!(set.conditions.as_ref().unwrap()[0].reason, "Pending");
    assert_eq!(
        set.listeners.as_ref().unwrap()[0].conditions[0].status,
        "False"
    );
}
