use super::*;
use serde_json::json;

fn service(value: serde_json::Value) -> Service {
    serde_json::from_value(value).unwrap()
}

fn lb(extra_spec: serde_json::Value) -> Service {
    let mut spec = json!({"type": "LoadBalancer", "selector": {"app": "gw"}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    service(json!({
        "metadata": {"name": "gw", "namespace": "ns", "uid": "u1"},
        "spec": spec,
    }))
}

fn pod(name: &str, namespace: &str, app: &str, ip: &str, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"), "labels": {"app": app}},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
        },
    }))
    .unwrap()
}

#[test]
fn serves_load_balancers_without_a_class() {
    assert!(is_served(&lb(json!({}))));
    assert!(!is_served(&lb(
        json!({"loadBalancerClass": "example.com/lb"})
    )));
    assert!(!is_served(&service(json!({
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"type": "ClusterIP"},
    }))));
}

#[test]
fn reads_the_requested_address() {
    assert_eq!(requested(&lb(json!({}))), Requested::Any);
    assert_eq!(
        requested(&lb(json!({"loadBalancerIP": "10.216.0.250"}))),
        Requested::Ip(Ipv4Addr::new(10, 216, 0, 250))
    );
    assert_eq!(
        requested(&lb(json!({"loadBalancerIP": "fd00::1"}))),
        Requested::Unusable
    );
}

#[test]
fn reads_and_compares_the_status() {
    let mut svc = lb(json!({}));
    assert_eq!(status_ip(&svc), None);
    assert!(status_is(&svc, None));
    svc.status = serde_json::from_value(
        json!({"loadBalancer": {"ingress": [{"ip": "10.216.0.2", "ipMode": "VIP"}]}}),
    )
    .unwrap();
    let ip = Ipv4Addr::new(10, 216, 0, 2);
    assert_eq!(status_ip(&svc), Some(ip));
    assert!(status_is(&svc, Some(ip)));
    assert!(!status_is(&svc, None));
    assert!(!status_is(&svc, Some(Ipv4Addr::new(10, 216, 0, 3))));
}

#[test]
fn endpoints_are_ready_selected_pods_of_the_namespace() {
    let pods = [
        pod("b", "ns", "gw", "10.244.0.6", true),
        pod("a", "ns", "gw", "10.244.0.5", true),
        pod("not-ready", "ns", "gw", "10.244.0.7", false),
        pod("other-app", "ns", "web", "10.244.0.8", true),
        pod("other-ns", "elsewhere", "gw", "10.244.0.9", true),
    ];
    let found = endpoints(&lb(json!({})), &pods, "node");
    let ips: Vec<Ipv4Addr> = found.iter().map(|e| e.ip).collect();
    assert_eq!(
        ips,
        [Ipv4Addr::new(10, 244, 0, 5), Ipv4Addr::new(10, 244, 0, 6)]
    );
    assert_eq!(found[0].netns, netns::names_for("node", "uid-a").0);
    let no_selector = service(json!({
        "metadata": {"name": "gw", "namespace": "ns"},
        "spec": {"type": "LoadBalancer"},
    }));
    assert!(endpoints(&no_selector, &pods, "node").is_empty());
}
