use coxswain_api::Gateway;
use coxswain_api::crds::CoxswainGatewayParametersSpec;
use serde_json::json;

use super::*;
use crate::labels::{
    COMPONENT_LABEL, GATEWAY_NAME_LABEL, INSTANCE_LABEL, MANAGED_BY_LABEL, NAME_LABEL,
    reserved_collisions,
};

pub fn gateway(infrastructure: serde_json::Value) -> Gateway {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "apps", "uid": "u-1"},
        "spec": {"gatewayClassName": "c", "infrastructure": infrastructure,
                 "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
    }))
    .unwrap()
}

pub fn params(spec: serde_json::Value) -> CoxswainGatewayParametersSpec {
    serde_json::from_value(spec).unwrap()
}

pub fn settings() -> PoolSettings {
    PoolSettings {
        image: "coxswain:0.1".into(),
        stream_endpoint: "coxswain.coxswain-system.svc:9902".into(),
        stream_server_name: "coxswain.coxswain-system.svc".into(),
    }
}

fn pod(deployment: &Deployment) -> &PodSpec {
    deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
}

#[test]
fn deployment_runs_the_proxy_with_its_stream_credentials() {
    let spec = params(json!({
        "replicas": 3, "image": "registry.example/coxswain:1.2",
        "logLevel": "info,coxswain_proxy=debug"
    }));
    let d = desired_deployment(&gateway(json!(null)), &spec, &settings()).unwrap();
    assert_eq!(d.metadata.name.as_deref(), Some("web-coxswain"));
    assert_eq!(d.metadata.namespace.as_deref(), Some("apps"));
    let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("Gateway", "u-1", Some(true))
    );
    let dspec = d.spec.as_ref().unwrap();
    assert_eq!(dspec.replicas, Some(3));
    let selector = dspec.selector.match_labels.as_ref().unwrap();
    assert_eq!(selector, &pool_labels("web"));
    assert_eq!(
        dspec.template.metadata.as_ref().unwrap().labels.as_ref(),
        Some(selector),
        "pod labels are the selector labels"
    );
    assert_eq!(
        selector[NAME_LABEL], "coxswain-proxy",
        "never the shared proxies' name"
    );
    let pod = pod(&d);
    assert_eq!(pod.service_account_name.as_deref(), Some("web-coxswain"));
    assert_eq!(pod.automount_service_account_token, Some(false));
    let container = &pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example/coxswain:1.2")
    );
    let env = container.env.as_ref().unwrap();
    assert_eq!(
        (env[0].name.as_str(), env[0].value.as_deref()),
        ("RUST_LOG", Some("info,coxswain_proxy=debug"))
    );
    assert_eq!(
        container.args.as_ref().unwrap(),
        &[
            "proxy",
            "--config-stream",
            "coxswain.coxswain-system.svc:9902",
            "--stream-server-name",
            "coxswain.coxswain-system.svc",
            "--stream-credentials",
            "/etc/coxswain/stream",
            "--state-dir",
            "/var/lib/coxswain",
            "--admin-address",
            "0.0.0.0:9901",
        ]
    );
    let ready = container
        .readiness_probe
        .as_ref()
        .unwrap()
        .http_get
        .as_ref()
        .unwrap();
    assert_eq!(ready.path.as_deref(), Some("/readyz"));
    assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 9901);
    let mounts: Vec<(&str, &str)> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    assert_eq!(
        mounts,
        [
            ("stream", "/etc/coxswain/stream"),
            ("state", "/var/lib/coxswain")
        ]
    );
    let volumes = pod.volumes.as_ref().unwrap();
    assert_eq!(
        volumes[0].secret.as_ref().unwrap().secret_name.as_deref(),
        Some("web-coxswain-stream")
    );
    assert!(volumes[1].empty_dir.is_some());
}

#[test]
fn defaults_without_parameters_fields() {
    let spec = params(json!({}));
    let d = desired_deployment(&gateway(json!(null)), &spec, &settings()).unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    let pod = pod(&d);
    let container = &pod.containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("coxswain:0.1"),
        "--proxy-image"
    );
    assert_eq!(
        container.env.as_ref().unwrap()[0].value.as_deref(),
        Some("info")
    );
    assert!(container.resources.is_none());
    assert!(pod.node_selector.is_none() && pod.tolerations.is_none() && pod.affinity.is_none());
    assert!(desired_pdb(&gateway(json!(null)), &spec).is_none());
    let mut unstored = gateway(json!(null));
    unstored.metadata.uid = None;
    assert!(desired_deployment(&unstored, &spec, &settings()).is_none());
}

/// The whole Kubernetes types go into the pod as written: every key of
/// them reaches it.
#[test]
fn placement_and_resources_are_copied() {
    let term = json!({
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "x"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["hot"]}]},
        "namespaceSelector": {"matchLabels": {"team": "a"},
            "matchExpressions": [{"key": "env", "operator": "Exists"}]},
        "namespaces": ["apps"], "matchLabelKeys": ["pod-template-hash"],
        "mismatchLabelKeys": ["tenant"]
    });
    let node_term = json!({
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]
    });
    let spec = params(json!({
        "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "256Mi"},
                      "claims": [{"name": "gpu", "request": "small"}]},
        "nodeSelector": {"pool": "edge"},
        "tolerations": [{"key": "edge", "operator": "Equal", "value": "true",
                         "effect": "NoExecute", "tolerationSeconds": 30}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [node_term]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": node_term}]
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
            }
        }
    }));
    let d = desired_deployment(&gateway(json!(null)), &spec, &settings()).unwrap();
    let pod = pod(&d);
    assert_eq!(pod.containers[0].resources, spec.resources);
    assert_eq!(pod.node_selector.as_ref(), Some(&spec.node_selector));
    assert_eq!(pod.tolerations.as_ref(), Some(&spec.tolerations));
    assert_eq!(pod.affinity, spec.affinity);
    // Nothing was lost parsing them either.
    let affinity = serde_json::to_value(&pod.affinity).unwrap();
    let anti = &affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["podAffinityTerm"]["mismatchLabelKeys"][0], "tenant");
    assert_eq!(anti["weight"], 100);
    let claims = serde_json::to_value(&pod.containers[0].resources).unwrap();
    assert_eq!(claims["claims"][0]["request"], "small");
}

#[test]
fn metadata_merges_labels_and_drops_reserved_keys() {
    let gw = gateway(json!({
        "labels": {"team": "gateway-team", "cost-center": "42",
                   "app.kubernetes.io/instance": "hijack"},
        "annotations": {"note": "from-gateway"}
    }));
    let spec = params(json!({
        "labels": {"team": "payments", "tier": "edge", "app.kubernetes.io/name": "mine",
                   "gateway.networking.k8s.io/gateway-name": "other"},
        "annotations": {"note": "from-params", "owner": "payments@example.com"}
    }));
    let sa = desired_pool_service_account(&gw, &spec).unwrap();
    let d = desired_deployment(&gw, &spec, &settings()).unwrap();
    for meta in [&sa.metadata, &d.metadata] {
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(
            labels["team"], "gateway-team",
            "the Gateway's own labels win"
        );
        assert_eq!(
            (labels["cost-center"].as_str(), labels["tier"].as_str()),
            ("42", "edge")
        );
        assert_eq!(labels[INSTANCE_LABEL], "web");
        assert_eq!(labels[NAME_LABEL], "coxswain-proxy");
        assert_eq!(labels[GATEWAY_NAME_LABEL], "web");
        assert_eq!(labels[MANAGED_BY_LABEL], "coxswain");
        assert_eq!(labels[COMPONENT_LABEL], "proxy");
        let annotations = meta.annotations.as_ref().unwrap();
        assert_eq!(annotations["note"], "from-gateway");
        assert_eq!(annotations["owner"], "payments@example.com");
    }
    assert_eq!(sa.automount_service_account_token, Some(false));
    let dropped: Vec<String> = reserved_collisions(&gw, Some(&spec)).into_iter().collect();
    assert_eq!(
        dropped,
        [
            "app.kubernetes.io/instance",
            "app.kubernetes.io/name",
            "gateway.networking.k8s.io/gateway-name"
        ]
    );
    assert!(reserved_collisions(&gateway(json!(null)), None).is_empty());
}

#[test]
fn pdb_takes_the_one_field_set() {
    let gw = gateway(json!(null));
    let min = desired_pdb(
        &gw,
        &params(json!({"podDisruptionBudget": {"minAvailable": 2}})),
    )
    .unwrap();
    let spec = min.spec.as_ref().unwrap();
    assert_eq!(spec.min_available, Some(IntOrString::Int(2)));
    assert_eq!(spec.max_unavailable, None);
    assert_eq!(
        spec.selector.as_ref().unwrap().match_labels.as_ref(),
        Some(&pool_labels("web"))
    );
    assert_eq!(min.metadata.name.as_deref(), Some("web-coxswain"));
    let max = desired_pdb(
        &gw,
        &params(json!({"podDisruptionBudget": {"maxUnavailable": "50%"}})),
    )
    .unwrap();
    let spec = max.spec.unwrap();
    assert_eq!(
        spec.max_unavailable,
        Some(IntOrString::String("50%".into()))
    );
    assert_eq!(spec.min_available, None);
}
