use std::sync::Arc;

use coxswain_api::{CoxswainGatewayParameters, Deployment, Object, Service};
use coxswain_translate::Output;
use serde_json::json;

use super::*;
use crate::pool::tests::{gateway, settings};

fn parameters(spec: serde_json::Value) -> Arc<CoxswainGatewayParameters> {
    Arc::new(
        serde_json::from_value(
            json!({"metadata": {"name": "p", "namespace": "apps"}, "spec": spec}),
        )
        .unwrap(),
    )
}

fn dedicated(spec: serde_json::Value) -> Output {
    Output {
        dedicated: [("apps/web".to_string(), parameters(spec))].into(),
        ..Output::default()
    }
}

fn load_balancer() -> AddressMode {
    AddressMode::LoadBalancer {
        proxy_selector: [("app.kubernetes.io/name".to_string(), "coxswain".to_string())].into(),
    }
}

fn pool_mode() -> AddressMode {
    AddressMode::Pool("127.0.10.0/24".parse().unwrap())
}

fn plan_for(snapshot: &Snapshot, output: &Output, addresses: &AddressMode) -> Provisioning {
    let gw = Arc::new(gateway(
        json!({"labels": {"app.kubernetes.io/component": "x"}}),
    ));
    let key = ObjectKey::new("apps", "web");
    plan(
        snapshot,
        [(&key, &gw)].into_iter(),
        output,
        addresses,
        Some(&settings()),
    )
}

/// What a dedicated Gateway left behind: its Deployment and Service.
fn leftovers(owner_uid: &str) -> Snapshot {
    let meta = json!({"name": "web-coxswain", "namespace": "apps",
        "labels": {"app.kubernetes.io/managed-by": "coxswain"},
        "ownerReferences": [{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                             "name": "web", "uid": owner_uid, "controller": true}]});
    let mut s = Snapshot::default();
    s.insert(Object::Deployment(Arc::new(
        serde_json::from_value::<Deployment>(json!({"metadata": meta})).unwrap(),
    )));
    s.insert(Object::Service(Arc::new(
        serde_json::from_value::<Service>(json!({"metadata": meta,
            "spec": {"selector": crate::labels::pool_labels("web")}}))
        .unwrap(),
    )));
    let mut secret_meta = meta.clone();
    secret_meta["name"] = json!("web-coxswain-stream");
    s.insert(Object::Secret(Arc::new(
        serde_json::from_value(json!({"metadata": secret_meta})).unwrap(),
    )));
    s
}

#[test]
fn a_dedicated_gateway_gets_its_whole_pool() {
    let output = dedicated(json!({"podDisruptionBudget": {"maxUnavailable": 1}}));
    let plan = plan_for(&Snapshot::default(), &output, &pool_mode());
    let names = |items: Vec<Option<String>>| items.into_iter().flatten().collect::<Vec<_>>();
    assert_eq!(
        names(
            plan.deployments
                .iter()
                .map(|d| d.metadata.name.clone())
                .collect()
        ),
        ["web-coxswain"]
    );
    assert_eq!(
        plan.services.len(),
        1,
        "its own Service, in the pool address mode too"
    );
    assert_eq!(plan.service_accounts.len(), 1);
    assert_eq!(plan.pod_disruption_budgets.len(), 1);
    assert!(plan.teardowns.is_empty());
    let sa_labels = plan.service_accounts[0].metadata.labels.as_ref().unwrap();
    assert_eq!(sa_labels["app.kubernetes.io/instance"], "web");
    assert_eq!(
        plan.reserved_labels[&ObjectKey::new("apps", "web")]
            .iter()
            .collect::<Vec<_>>(),
        ["app.kubernetes.io/component"]
    );

    // Without a PDB configured, one it may have had is deleted.
    let plan = plan_for(&Snapshot::default(), &dedicated(json!({})), &pool_mode());
    assert!(plan.pod_disruption_budgets.is_empty());
    assert_eq!(
        plan.teardowns,
        [PoolTeardown {
            gateway: ObjectKey::new("apps", "web"),
            pod_disruption_budget: true,
            ..PoolTeardown::default()
        }]
    );
    assert_eq!(
        plan.teardowns[0].object(),
        ObjectKey::new("apps", "web-coxswain")
    );
}

#[test]
fn back_to_shared_tears_the_pool_down() {
    let shared = Output::default();
    let plan = plan_for(&leftovers("u-1"), &shared, &pool_mode());
    assert!(plan.deployments.is_empty() && plan.services.is_empty());
    assert_eq!(
        plan.teardowns,
        [PoolTeardown {
            gateway: ObjectKey::new("apps", "web"),
            pod_disruption_budget: true,
            service: true,
            deployment: true,
            stream_secret: true,
        }]
    );
    // LoadBalancer mode: the shared Service takes the name over (applied,
    // not deleted).
    let plan = plan_for(&leftovers("u-1"), &shared, &load_balancer());
    assert_eq!(plan.services.len(), 1);
    assert!(plan.teardowns[0].deployment && !plan.teardowns[0].service);
    // Not ours (another Gateway of the same name, since deleted): left to
    // the garbage collector.
    let plan = plan_for(&leftovers("someone-else"), &shared, &pool_mode());
    assert!(plan.teardowns.is_empty());
    // Nothing left behind: nothing to delete.
    assert!(
        plan_for(&Snapshot::default(), &shared, &pool_mode())
            .teardowns
            .is_empty()
    );
}
