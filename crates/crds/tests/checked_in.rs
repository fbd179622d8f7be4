//! deploy/crds/ must hold exactly what the types generate. Regenerate with
//!   cargo run -p coxswain -- crds > deploy/crds/coxswain.yaml

use std::path::PathBuf;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn checked_in_crds_match_the_types() {
    let path = repo_root().join(coxswain_crds::CHECKED_IN_PATH);
    let on_disk = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let generated = coxswain_crds::all_yaml().unwrap();
    assert!(
        on_disk == generated,
        "{} drifted from the Rust types; regenerate with \
         `cargo run -p coxswain -- crds > {}`",
        path.display(),
        coxswain_crds::CHECKED_IN_PATH
    );
}

#[test]
fn no_other_files_in_deploy_crds() {
    let dir = repo_root().join("deploy/crds");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert_eq!(
            format!("deploy/crds/{name}"),
            coxswain_crds::CHECKED_IN_PATH,
            "hand-written CRD files are not allowed"
        );
    }
}

#[test]
fn crds_are_namespaced_in_our_group_with_a_schema() {
    let crds = coxswain_crds::all();
    let names: Vec<_> = crds.iter().map(|c| c.spec.names.kind.clone()).collect();
    assert_eq!(
        names,
        [
            "BasicAuth",
            "ClientTrafficPolicy",
            "Compression",
            "CoxswainBackendPolicy",
            "CoxswainExternalAuth",
            "CoxswainGatewayParameters",
            "IpAccessControl",
            "JwtAuth",
            "PathRewriteRegex",
            "RateLimit",
            "RequestSizeLimit"
        ]
    );
    for crd in crds {
        assert_eq!(crd.spec.group, coxswain_crds::GROUP);
        assert_eq!(crd.spec.scope, "Namespaced");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(version.served && version.storage);
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        assert!(schema.is_some());
    }
    // The controller writes the policy's ancestors through the status
    // subresource (the RBAC grants only that).
    let policy = &coxswain_crds::all()[0].spec.versions[0];
    assert!(
        policy
            .subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_some()
    );
}

#[test]
fn enums_are_in_the_schema() {
    let yaml = coxswain_crds::all_yaml().unwrap();
    for value in ["LoadBalancer", "NodePort", "ClusterIP"] {
        assert!(
            yaml.contains(&format!("- {value}\n")),
            "schema lacks {value}"
        );
    }
}

#[test]
fn specs_round_trip() {
    // The user guide's full example, values it documents included.
    let policy: coxswain_crds::CoxswainBackendPolicySpec =
        serde_json::from_value(serde_json::json!({
            "targetRefs": [{"group": "", "kind": "Service", "name": "api"}],
            "timeouts": {"connect": "500ms", "idle": "60s"},
            "loadBalancer": {"algorithm": "least_conn"},
            "circuitBreaker": {"threshold": 50, "window": "10s", "openDuration": "5s",
                               "minRequests": 10, "maxOpenDuration": "1m"},
            "sessionPersistence": {"type": "Cookie", "sessionName": "my-session"}
        }))
        .unwrap();
    assert_eq!(
        policy.load_balancer.unwrap().algorithm.as_deref(),
        Some("least_conn")
    );
    let breaker = policy.circuit_breaker.unwrap();
    assert_eq!(
        (breaker.threshold, breaker.min_requests),
        (Some(50), Some(10))
    );
    assert_eq!(breaker.max_open_duration.as_deref(), Some("1m"));
    let persistence = policy.session_persistence.unwrap();
    assert_eq!(persistence.type_.as_deref(), Some("Cookie"));
    let params: coxswain_crds::CoxswainGatewayParametersSpec =
        serde_json::from_value(serde_json::json!({"replicas": 2, "serviceType": "ClusterIP"}))
            .unwrap();
    assert_eq!(
        params.service_type,
        Some(coxswain_crds::ServiceTypeOverride::ClusterIp)
    );
}

#[test]
fn the_backend_policy_schema_keeps_every_field() {
    // A field missing from the schema is pruned by the API server: the
    // policy would look configured while the proxy never sees it.
    let yaml = coxswain_crds::all_yaml().unwrap();
    for field in [
        "circuitBreaker:",
        "maxOpenDuration:",
        "sessionPersistence:",
        "sessionName:",
        "algorithm:",
        "ancestors:",
    ] {
        assert!(yaml.contains(field), "schema lacks {field}");
    }
}

#[test]
fn gateway_parameters_round_trip_and_validate_in_the_schema() {
    let params: coxswain_crds::CoxswainGatewayParametersSpec =
        serde_json::from_value(serde_json::json!({
            "replicas": 3,
            "image": "registry.example/coxswain:1.2",
            "logLevel": "info,coxswain_proxy=debug",
            "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "256Mi"}},
            "nodeSelector": {"pool": "edge"},
            "tolerations": [{"key": "edge", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
            ]}},
            "serviceType": "LoadBalancer",
            "service": {"externalTrafficPolicy": "Local", "annotations": {"lb/kind": "nlb"},
                        "loadBalancerClass": "example.com/lb"},
            "podDisruptionBudget": {"maxUnavailable": "50%"}
        }))
        .unwrap();
    let service = params.service.as_ref().unwrap();
    assert_eq!(
        service.external_traffic_policy,
        Some(coxswain_crds::ExternalTrafficPolicy::Local)
    );
    assert_eq!(params.tolerations.len(), 1);
    let back = serde_json::to_value(&params).unwrap();
    assert_eq!(back["podDisruptionBudget"]["maxUnavailable"], "50%");
    assert_eq!(back["logLevel"], "info,coxswain_proxy=debug");

    // What the API server checks itself: no negative replicas, exactly one
    // PDB field, Service fields only with a Service type that takes them.
    let crd = coxswain_crds::all()
        .into_iter()
        .find(|c| c.spec.names.kind == "CoxswainGatewayParameters")
        .unwrap();
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    let text = schema.to_string();
    for rule in [
        "has(self.minAvailable) != has(self.maxUnavailable)",
        "self.serviceType == 'LoadBalancer'",
        "self.serviceType != 'ClusterIP'",
    ] {
        assert!(text.contains(rule), "schema lacks the rule {rule}");
    }
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["replicas"]["minimum"].as_f64(), Some(0.0));
    for field in [
        "image",
        "logLevel",
        "resources",
        "nodeSelector",
        "tolerations",
        "affinity",
        "service",
        "podDisruptionBudget",
    ] {
        assert!(spec.get(field).is_some(), "schema lacks {field}");
    }
    assert_eq!(
        spec["podDisruptionBudget"]["properties"]["minAvailable"]["x-kubernetes-int-or-string"],
        true
    );
}
