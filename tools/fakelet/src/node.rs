//! The Node object: registration, a Ready heartbeat, and the node Lease.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::sync::watch;

const HEARTBEAT: Duration = Duration::from_secs(10);
const LEASE_NAMESPACE: &str = "kube-node-lease";

#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub ip: String,
    pub kubelet_port: u16,
    pub pod_cidr: String,
    pub max_pods: u32,
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": now,
    })
}

/// The full node status, as the heartbeat writes it.
pub fn status(info: &NodeInfo, now: Timestamp) -> Value {
    let now = Time(now);
    let now = serde_json::to_value(&now).unwrap_or(Value::Null);
    let now = now.as_str().unwrap_or("");
    let resources = json!({"cpu": "8", "memory": "16Gi", "pods": info.max_pods.to_string()});
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("Ready", "True", "KubeletReady", "fakelet is posting ready status", now),
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "", now),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "", now),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "", now),
        ],
        // InternalIP only: the apiserver reaches the kubelet port through it.
        "addresses": [{"type": "InternalIP", "address": info.ip}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": info.kubelet_port}},
        "nodeInfo": {
            "machineID": "fakelet", "systemUUID": "fakelet", "bootID": "fakelet",
            "kernelVersion": "", "osImage": "coxswain-fakelet",
            "containerRuntimeVersion": "fakelet://0.1.0",
            "kubeletVersion": "v1.35.0-fakelet", "kubeProxyVersion": "",
            "operatingSystem": "linux", "architecture": std::env::consts::ARCH,
        },
    })
}

fn node_object(info: &NodeInfo) -> Result<Node, serde_json::Error> {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": info.name,
            "labels": {
                "kubernetes.io/hostname": info.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": std::env::consts::ARCH,
                "coxswain.dev/fakelet": "true",
            },
        },
        "spec": {"podCIDR": info.pod_cidr, "podCIDRs": [info.pod_cidr]},
    }))
}

/// Creates the Node if needed and reports it Ready.
pub async fn register(client: &Client, info: &NodeInfo) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    if nodes.get_opt(&info.name).await?.is_none() {
        nodes
            .create(&PostParams::default(), &node_object(info)?)
            .await?;
    }
    post_status(&nodes, info).await?;
    Ok(())
}

async fn post_status(nodes: &Api<Node>, info: &NodeInfo) -> kube::Result<()> {
    let patch = json!({"status": status(info, Timestamp::now())});
    nodes
        .patch_status(&info.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn renew_lease(client: &Client, info: &NodeInfo) -> kube::Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(info.name.clone()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(info.name.clone()),
            lease_duration_seconds: Some(40),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..Default::default()
        }),
    };
    let params = PatchParams::apply("coxswain-fakelet").force();
    leases
        .patch(&info.name, &params, &Patch::Apply(&lease))
        .await?;
    Ok(())
}

/// Keeps the node Ready and its Lease fresh until `shutdown`.
pub async fn heartbeat(client: Client, info: NodeInfo, mut shutdown: watch::Receiver<bool>) {
    let nodes: Api<Node> = Api::all(client.clone());
    loop {
        if let Err(e) = post_status(&nodes, &info).await {
            tracing::warn!("node status update failed: {e}");
        }
        // The lease namespace may not exist on a bare control plane.
        if let Err(e) = renew_lease(&client, &info).await {
            tracing::debug!("node lease renewal failed: {e}");
        }
        tokio::select! {
            () = tokio::time::sleep(HEARTBEAT) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_carries_address_port_and_ready() {
        let info = NodeInfo {
            name: "n1".into(),
            ip: "10.99.0.2".into(),
            kubelet_port: 10250,
            pod_cidr: "10.244.0.0/24".into(),
            max_pods: 110,
        };
        let value = status(&info, Timestamp::UNIX_EPOCH);
        let status: k8s_openapi::api::core::v1::NodeStatus = serde_json::from_value(value).unwrap();
        let endpoint = status.daemon_endpoints.unwrap().kubelet_endpoint.unwrap();
        assert_eq!(endpoint.port, 10250);
        let addresses = status.addresses.unwrap();
        assert_eq!(addresses[0].address, "10.99.0.2");
        assert_eq!(addresses[0].type_, "InternalIP");
        let ready = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.status, "True");
        assert!(node_object(&info).is_ok());
    }
}
