//! Status written by the controller: GatewayClass acceptance and stability
//! on no-op re-applies.

use std::collections::BTreeMap;

use anyhow::ensure;
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use serde_json::Value;

use crate::fixtures::{CAP, NS, ensure_demo, wait_status};
use crate::setup::Env;

pub fn gatewayclass_accepted(env: &mut Env) -> anyhow::Result<()> {
    // The class comes from deploy/install.yaml, applied during setup.
    let class = poll::until("GatewayClass coxswain Accepted", CAP, || {
        let class = env.admin.get_json(&["gatewayclass", "coxswain"])?;
        Ok(is_true(&class["status"]["conditions"], "Accepted").then_some(class))
    })?;
    let generation = &class["metadata"]["generation"];
    for c in class["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        ensure!(
            &c["observedGeneration"] == generation,
            "stale condition {c}"
        );
    }
    let features: Vec<&str> = class["status"]["supportedFeatures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["name"].as_str())
        .collect();
    for required in ["Gateway", "HTTPRoute", "ReferenceGrant"] {
        ensure!(
            features.contains(&required),
            "supportedFeatures lacks {required}: {features:?}"
        );
    }
    println!("    Accepted; {} supportedFeatures", features.len());
    Ok(())
}

/// type -> (status, observedGeneration, lastTransitionTime)
fn conditions(conditions: &Value) -> BTreeMap<String, (Value, Value, Value)> {
    conditions
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let key = c["type"].as_str().unwrap_or_default().to_string();
            (
                key,
                (
                    c["status"].clone(),
                    c["observedGeneration"].clone(),
                    c["lastTransitionTime"].clone(),
                ),
            )
        })
        .collect()
}

struct Observed {
    class: Value,
    gateway: Value,
    route: Value,
}

fn observe(env: &Env) -> anyhow::Result<Observed> {
    Ok(Observed {
        class: env.admin.get_json(&["gatewayclass", "coxswain"])?,
        gateway: env.admin.get_json(&["-n", NS, "gateway", "demo"])?,
        route: env.admin.get_json(&["-n", NS, "httproute", "echo"])?,
    })
}

fn attached_routes(gateway: &Value) -> i64 {
    gateway["status"]["listeners"][0]["attachedRoutes"]
        .as_i64()
        .unwrap_or(-1)
}

const SENTINEL: &str = r#"apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: sentinel
  namespace: coxswain-demo
spec:
  parentRefs:
    - name: demo
  rules:
    - matches:
        - path: {type: PathPrefix, value: /sentinel}
      backendRefs:
        - name: echo
          port: 80
"#;

pub fn noop_reapply_keeps_status(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    let before = observe(env)?;
    let dir = env.repo.join("examples/kubernetes");
    // kubectl may still send a patch (merge patches replace whole lists,
    // and the server has defaulted fields in them); the API server must
    // find nothing changed: generations stay.
    env.admin
        .run(&["apply", "-f", &dir.display().to_string()])?;
    let reapplied = observe(env)?;
    let generation = |o: &Value| o["metadata"]["generation"].clone();
    for (what, old, new) in [
        ("GatewayClass", &before.class, &reapplied.class),
        ("Gateway", &before.gateway, &reapplied.gateway),
        ("HTTPRoute", &before.route, &reapplied.route),
    ] {
        ensure!(
            generation(old) == generation(new),
            "{what} generation moved on a no-op re-apply"
        );
    }
    // Make the controller run a full pass we can wait for: a metadata-only
    // change of the Gateway (generation stays) plus one more route.
    env.admin.run(&[
        "-n",
        NS,
        "annotate",
        "gateway",
        "demo",
        "e2e.coxswain/touched=yes",
        "--overwrite",
    ])?;
    env.admin.apply(SENTINEL)?;
    let want = attached_routes(&before.gateway) + 1;
    poll::until(
        "the pass after the re-apply (attachedRoutes + 1)",
        CAP,
        || {
            let gateway = env.admin.get_json(&["-n", NS, "gateway", "demo"])?;
            Ok((attached_routes(&gateway) == want).then_some(()))
        },
    )?;
    wait_status(env, "/sentinel", 200)?;
    let after = observe(env)?;

    let pairs = [
        (
            "GatewayClass",
            &before.class["status"]["conditions"],
            &after.class["status"]["conditions"],
        ),
        (
            "Gateway",
            &before.gateway["status"]["conditions"],
            &after.gateway["status"]["conditions"],
        ),
        (
            "Gateway listener",
            &before.gateway["status"]["listeners"][0]["conditions"],
            &after.gateway["status"]["listeners"][0]["conditions"],
        ),
        (
            "HTTPRoute",
            &before.route["status"]["parents"][0]["conditions"],
            &after.route["status"]["parents"][0]["conditions"],
        ),
    ];
    for (what, old, new) in pairs {
        let (old, new) = (conditions(old), conditions(new));
        ensure!(!old.is_empty(), "{what} had no conditions");
        ensure!(
            old == new,
            "{what} conditions changed:\n before {old:?}\n after  {new:?}"
        );
    }
    let rv = |o: &Value| o["metadata"]["resourceVersion"].clone();
    ensure!(
        rv(&before.route) == rv(&after.route),
        "HTTPRoute echo was written although nothing changed"
    );
    println!("    observedGeneration and lastTransitionTime unchanged; HTTPRoute not rewritten");
    env.admin
        .run(&["-n", NS, "delete", "httproute", "sentinel"])?;
    env.admin.run(&[
        "-n",
        NS,
        "annotate",
        "gateway",
        "demo",
        "e2e.coxswain/touched-",
    ])?;
    Ok(())
}
