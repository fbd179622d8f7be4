//! The chart's Deployment itself: its pod starts the real binary with the
//! chart's arguments and passes the chart's probes.

use std::time::Duration;

use anyhow::{Context, ensure};
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use serde_json::{Value, json};

use crate::fixtures::CAP;
use crate::setup::{Env, RELEASE_NAMESPACE};

const SELECTOR: &str = "app.kubernetes.io/name=coxswain";

fn pods(env: &Env) -> anyhow::Result<Vec<Value>> {
    let list = env
        .admin
        .get_json(&["-n", RELEASE_NAMESPACE, "pods", "-l", SELECTOR])?;
    Ok(list["items"].as_array().cloned().unwrap_or_default())
}

/// Two local adaptations, both about the fakelet, not the chart: the pod
/// gets the ServiceAccount kubeconfig as a file (the fakelet mounts no
/// token), and no resources (the fakelet reports QoS BestEffort, which the
/// API server rejects for a Burstable pod). It joins as a follower: the
/// test's controller holds the Lease and keeps writing status.
pub fn chart_deployment_pod_ready(env: &mut Env) -> anyhow::Result<()> {
    let kubeconfig = env.sa.kubeconfig.display().to_string();
    let patch = json!([
        {"op": "remove", "path": "/spec/template/spec/containers/0/resources"},
        {"op": "add", "path": "/spec/template/spec/containers/0/env/-",
         "value": {"name": "KUBECONFIG", "value": kubeconfig}},
        {"op": "replace", "path": "/spec/replicas", "value": 1},
    ]);
    env.admin.run(&[
        "-n",
        RELEASE_NAMESPACE,
        "patch",
        "deployment",
        "coxswain",
        "--type=json",
        "-p",
        &patch.to_string(),
    ])?;
    let pod = poll::until("chart pod Ready (readiness probe /readyz)", CAP, || {
        let ready = pods(env)?.into_iter().find(|p| {
            p["metadata"]["deletionTimestamp"].is_null()
                && is_true(&p["status"]["conditions"], "Ready")
        });
        Ok(ready)
    })?;
    let name = pod["metadata"]["name"]
        .as_str()
        .context("pod without name")?
        .to_string();
    let restarts = pod["status"]["containerStatuses"][0]["restartCount"].as_i64();
    ensure!(restarts == Some(0), "chart pod restarted: {restarts:?}");
    let lease = env
        .admin
        .get_json(&["-n", RELEASE_NAMESPACE, "lease", "coxswain-controller"])?;
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(
        holder != name,
        "the chart pod took the Lease from the test's controller"
    );
    println!("    pod {name} Ready with the chart's args and probes; Lease still held by {holder}");

    env.admin.run(&[
        "-n",
        RELEASE_NAMESPACE,
        "scale",
        "deployment/coxswain",
        "--replicas=0",
    ])?;
    poll::until("chart pod gone", Duration::from_secs(60), || {
        Ok(pods(env)?.is_empty().then_some(()))
    })?;
    Ok(())
}
