use std::collections::BTreeSet;
use std::net::IpAddr;

use coxswain_api::Gateway;
use serde_json::json;

use super::*;
use crate::labels::NAME_LABEL;
use crate::pool::tests::params;

fn gateway(addresses: serde_json::Value) -> Gateway {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "apps", "uid": "u-1"},
        "spec": {"gatewayClassName": "c", "addresses": addresses,
                 "infrastructure": {"annotations": {"owner": "gateway"}},
                 "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"},
                               {"name": "dns", "port": 53, "protocol": "UDP"}]}
    }))
    .unwrap()
}

fn spec_of(service: &Service) -> &ServiceSpec {
    service.spec.as_ref().unwrap()
}

#[test]
fn service_shape_follows_the_parameters() {
    let spec = params(json!({
        "serviceType": "LoadBalancer",
        "service": {"externalTrafficPolicy": "Local", "loadBalancerClass": "example.com/lb",
                    "annotations": {"lb.example/scheme": "internal"}},
        "annotations": {"owner": "params", "team": "payments"}
    }));
    let served: BTreeSet<(Transport, u16)> = [(Transport::Tcp, 8443)].into();
    let svc = desired_pool_service(&gateway(json!(null)), &spec, &served).unwrap();
    assert_eq!(svc.metadata.name.as_deref(), Some("web-coxswain"));
    let annotations = svc.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations["lb.example/scheme"], "internal",
        "service.annotations: Service only"
    );
    assert_eq!(annotations["owner"], "gateway");
    assert_eq!(annotations["team"], "payments");
    let s = spec_of(&svc);
    assert_eq!(s.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(s.external_traffic_policy.as_deref(), Some("Local"));
    assert_eq!(s.load_balancer_class.as_deref(), Some("example.com/lb"));
    let selector = s.selector.as_ref().unwrap();
    assert_eq!(selector, &pool_labels("web"));
    assert_ne!(selector[NAME_LABEL], "coxswain", "not the shared proxies");
    let ports: Vec<(i32, &str)> = s
        .ports
        .iter()
        .flatten()
        .map(|p| (p.port, p.protocol.as_deref().unwrap()))
        .collect();
    assert_eq!(ports, [(80, "TCP"), (8443, "TCP"), (53, "UDP")]);
    for (kind, want) in [("NodePort", "NodePort"), ("ClusterIP", "ClusterIP")] {
        let spec = params(json!({"serviceType": kind}));
        let svc = desired_pool_service(&gateway(json!(null)), &spec, &BTreeSet::new()).unwrap();
        assert_eq!(spec_of(&svc).type_.as_deref(), Some(want));
        assert!(spec_of(&svc).external_traffic_policy.is_none());
    }
    let default = desired_pool_service(&gateway(json!(null)), &params(json!({})), &served).unwrap();
    assert_eq!(spec_of(&default).type_.as_deref(), Some("LoadBalancer"));
}

#[test]
fn requested_addresses_go_to_the_service() {
    let one = json!([{"type": "IPAddress", "value": "192.0.2.1"},
                     {"type": "IPAddress", "value": ""},
                     {"type": "Hostname", "value": "x.example"}]);
    let two = json!([{"value": "192.0.2.1"}, {"value": "192.0.2.2"}]);
    let lb = params(json!({}));
    let svc = desired_pool_service(&gateway(one.clone()), &lb, &BTreeSet::new()).unwrap();
    assert_eq!(spec_of(&svc).load_balancer_ip.as_deref(), Some("192.0.2.1"));
    assert!(spec_of(&svc).external_ips.is_none());
    let any: IpAddr = "0.0.0.0".parse().unwrap();
    assert_eq!(
        pool_bind(&gateway(one), &lb, any),
        Ok(vec![any]),
        "pods bind the wildcard"
    );

    let svc = desired_pool_service(&gateway(two.clone()), &lb, &BTreeSet::new()).unwrap();
    assert!(spec_of(&svc).load_balancer_ip.is_none());
    let refused = pool_bind(&gateway(two.clone()), &lb, any).unwrap_err();
    assert!(refused.contains("one requested address"), "{refused}");

    let node_port = params(json!({"serviceType": "NodePort"}));
    let svc = desired_pool_service(&gateway(two.clone()), &node_port, &BTreeSet::new()).unwrap();
    assert_eq!(
        spec_of(&svc).external_ips.as_deref(),
        Some(&["192.0.2.1".to_string(), "192.0.2.2".to_string()][..])
    );
    assert!(pool_bind(&gateway(two), &node_port, any).is_ok());
    let v6: IpAddr = "::".parse().unwrap();
    assert_eq!(
        pool_bind(&gateway(json!(null)), &lb, "::1".parse().unwrap()),
        Ok(vec![v6])
    );
}

#[test]
fn pool_addresses_by_service_type() {
    let service: Service = serde_json::from_value(json!({
        "spec": {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7", "fd00::7"]},
        "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}
    }))
    .unwrap();
    let values = |spec| -> Vec<String> {
        pool_addresses(&service, &params(spec))
            .into_iter()
            .map(|a| a.value)
            .collect()
    };
    assert_eq!(values(json!({})), ["lb.example"]);
    assert_eq!(
        values(json!({"serviceType": "ClusterIP"})),
        ["10.96.0.7", "fd00::7"]
    );
    let headless: Service = serde_json::from_value(json!({"spec": {"clusterIP": "None"}})).unwrap();
    assert!(pool_addresses(&headless, &params(json!({"serviceType": "NodePort"}))).is_empty());
}
