//! How Gateways get their addresses: a LoadBalancer Service each (default)
//! or an address from `--gateway-address-pool`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use coxswain_api::gw::gateways::GatewayStatus;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use coxswain_api::{ObjectKey, Snapshot};
use coxswain_translate::{AssignedAddresses, Statuses};

use crate::address_pool::{AddressPool, AddressRequest};
use crate::gateway_service::{ingress_addresses, resource_name};
use crate::ours::our_gateways;

#[derive(Clone, Debug)]
pub enum AddressMode {
    /// A LoadBalancer Service per Gateway selecting the proxy pods.
    LoadBalancer {
        proxy_selector: BTreeMap<String, String>,
    },
    /// Each Gateway binds its own address from this block.
    Pool(AddressPool),
}

/// What this controller assigned last time. Preferred over the Gateway's
/// status, which the watch may not have shown yet: without it a Gateway
/// created just before another (that sorts first) could lose the address it
/// was just given, and a client holding that address would reach the wrong
/// Gateway.
pub type AddressMemory = BTreeMap<ObjectKey, AssignedAddresses>;

/// What each of our Gateways asks of the pool. Dedicated Gateways (keys
/// `namespace/name` in `dedicated`) ask nothing: their addresses are their
/// own Service's.
pub fn pool_requests<V>(
    snapshot: &Snapshot,
    classes: &BTreeSet<String>,
    remembered: &AddressMemory,
    dedicated: &BTreeMap<String, V>,
) -> BTreeMap<ObjectKey, AddressRequest> {
    our_gateways(snapshot, classes)
        .filter(|(key, _)| !dedicated.contains_key(&key.to_string()))
        .map(|(key, gw)| {
            let mut request = AddressRequest::default();
            let spec = gw.spec.addresses.as_deref().unwrap_or_default();
            request.wants_any = spec.is_empty();
            for address in spec {
                if address.r#type.as_deref().unwrap_or("IPAddress") != "IPAddress" {
                    continue; // the translator reports UnsupportedAddress
                }
                match address.value.as_deref().unwrap_or_default() {
                    "" => request.wants_any = true,
                    value => request.explicit.extend(value.parse::<IpAddr>().ok()),
                }
            }
            let given = remembered.get(key).and_then(|a| a.as_ref().ok());
            request.current = given.into_iter().flatten().copied().collect();
            let reported = gw
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .into_iter()
                .flatten()
                .filter(|a| a.r#type.as_deref().unwrap_or("IPAddress") == "IPAddress")
                .filter_map(|a| a.value.parse::<IpAddr>().ok());
            request.current.extend(reported);
            (key.clone(), request)
        })
        .collect()
}

/// LoadBalancer mode: a Gateway's addresses are its Service's ingress;
/// until the load balancer assigns one the Gateway is not Programmed.
/// Dedicated Gateways are left to `overlay_pool_status`.
pub fn overlay_load_balancer_addresses<V>(
    statuses: &mut Statuses,
    snapshot: &Snapshot,
    dedicated: &BTreeMap<String, V>,
) {
    for (key, status) in statuses.gateways.iter_mut() {
        if dedicated.contains_key(&key.to_string()) {
            continue;
        }
        let service_key = ObjectKey::new(key.namespace.clone(), resource_name(&key.name));
        let addresses = snapshot
            .services
            .get(&service_key)
            .map(|svc| ingress_addresses(svc))
            .unwrap_or_default();
        if addresses.is_empty() {
            status.addresses = None;
            mark_unassigned(status, &service_key);
        } else {
            status.addresses = Some(addresses);
        }
    }
}

fn mark_unassigned(status: &mut GatewayStatus, service: &ObjectKey) {
    let programmed = status
        .conditions
        .iter_mut()
        .flatten()
        .find(|c: &&mut Condition| c.type_ == "Programmed" && c.status == "True");
    if let Some(condition) = programmed {
        condition.status = "False".to_string();
        condition.reason = "AddressNotAssigned".to_string();
        condition.message = format!("waiting for a load balancer address on Service {service}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use coxswain_api::{Gateway, GatewayClass, Object, Service};
    use serde_json::json;

    use super::*;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        s.insert(Object::GatewayClass(Arc::new(
            serde_json::from_value::<GatewayClass>(json!({
                "metadata": {"name": "c"}, "spec": {"controllerName": "me"}
            }))
            .unwrap(),
        )));
        for (name, addresses, status) in [
            (
                "a",
                json!(null),
                json!({"addresses": [{"value": "10.0.0.4"}]}),
            ),
            (
                "b",
                json!([{"value": "10.0.0.9"}, {"type": "Hostname", "value": "h"}]),
                json!({}),
            ),
            ("c", json!([{"type": "IPAddress", "value": ""}]), json!({})),
        ] {
            s.insert(Object::Gateway(Arc::new(
                serde_json::from_value::<Gateway>(json!({
                    "metadata": {"name": name, "namespace": "ns"},
                    "spec": {"gatewayClassName": "c", "addresses": addresses, "listeners": []},
                    "status": status
                }))
                .unwrap(),
            )));
        }
        s
    }

    #[test]
    fn requests_from_spec_and_status() {
        let classes: BTreeSet<String> = ["c".to_string()].into();
        let none = BTreeMap::<String, ()>::new();
        let got = pool_requests(&snapshot(), &classes, &AddressMemory::new(), &none);
        let a = &got[&ObjectKey::new("ns", "a")];
        assert!(a.wants_any);
        assert_eq!(a.current, vec!["10.0.0.4".parse::<IpAddr>().unwrap()]);
        let b = &got[&ObjectKey::new("ns", "b")];
        assert!(!b.wants_any);
        assert_eq!(b.explicit, vec!["10.0.0.9".parse::<IpAddr>().unwrap()]);
        assert!(got[&ObjectKey::new("ns", "c")].wants_any);
        assert!(
            pool_requests(&snapshot(), &BTreeSet::new(), &AddressMemory::new(), &none).is_empty()
        );
        let dedicated: BTreeMap<String, ()> = [("ns/a".to_string(), ())].into();
        let got = pool_requests(&snapshot(), &classes, &AddressMemory::new(), &dedicated);
        assert!(
            !got.contains_key(&ObjectKey::new("ns", "a")),
            "a dedicated Gateway asks nothing"
        );
    }

    #[test]
    fn load_balancer_overlay() {
        let mut s = snapshot();
        s.insert(Object::Service(Arc::new(
            serde_json::from_value::<Service>(json!({
                "metadata": {"name": "a-coxswain", "namespace": "ns"},
                "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}]}}
            }))
            .unwrap(),
        )));
        let programmed = json!({"conditions": [{"type": "Programmed", "status": "True",
            "reason": "Programmed", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]});
        let mut statuses = Statuses::default();
        for name in ["a", "b"] {
            statuses.gateways.insert(
                ObjectKey::new("ns", name),
                serde_json::from_value(programmed.clone()).unwrap(),
            );
        }
        overlay_load_balancer_addresses(&mut statuses, &s, &BTreeMap::<String, ()>::new());
        let a = &statuses.gateways[&ObjectKey::new("ns", "a")];
        assert_eq!(a.addresses.as_ref().unwrap()[0].value, "203.0.113.1");
        assert_eq!(a.conditions.as_ref().unwrap()[0].status, "True");
        let b = &statuses.gateways[&ObjectKey::new("ns", "b")];
        assert!(b.addresses.is_none());
        assert_eq!(
            b.conditions.as_ref().unwrap()[0].reason,
            "AddressNotAssigned"
        );
    }
}
