//! Status written by the controller: GatewayClass acceptance and stability
//! on no-op re-applies.

use std::collections::BTreeMap;

use anyhow::ensure;
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use serde_json::{Value, json};

use crate::fixtures::{CAP, NS, admin_metric, ensure_demo, wait_status};
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

/// Another controller's entry added to our HTTPRoute's status: the watch
/// event changes the route's status alone, so the controller serves it from
/// the last translation (counted as a status echo, not translated), and
/// its writer, handed the object as it is now, keeps both entries.
pub fn route_status_echo_is_not_translated(env: &mut Env) -> anyhow::Result<()> {
    const THEIRS: &str = "example.com/other-controller";
    ensure_demo(env)?;
    let echoes = || admin_metric(env, "coxswain_controller_status_echoes_total");
    let before = echoes()?;
    let route = |env: &Env| env.admin.get_json(&["-n", NS, "httproute", "echo"]);
    let ours = route(env)?["status"]["parents"]
        .as_array()
        .map_or(0, Vec::len);
    ensure!(
        ours == 1,
        "HTTPRoute echo has {ours} status parents, want ours alone"
    );
    // One more bump if an unrelated change happened to join the first
    // one's burst (then the burst is translated and nothing is counted).
    let mut counted = false;
    for attempt in 0..3 {
        let entry = json!({
            "parentRef": {"name": "demo"},
            "controllerName": THEIRS,
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                            "message": format!("attempt {attempt}"),
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        });
        let op = if attempt == 0 { "add" } else { "replace" };
        let path = if attempt == 0 {
            "/status/parents/-"
        } else {
            "/status/parents/1"
        };
        let patch = json!([{"op": op, "path": path, "value": entry}]).to_string();
        env.admin.run(&[
            "-n",
            NS,
            "patch",
            "httproute",
            "echo",
            "--subresource=status",
            "--type=json",
            "-p",
            &patch,
        ])?;
        counted = poll::until(
            "the status echo counted",
            std::time::Duration::from_secs(10),
            || Ok((echoes()? > before).then_some(())),
        )
        .is_ok();
        if counted {
            break;
        }
    }
    ensure!(counted, "no watch event was counted as a status echo");
    let parents = route(env)?["status"]["parents"].clone();
    let controllers: Vec<&str> = parents
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["controllerName"].as_str())
        .collect();
    ensure!(
        controllers.len() == 2 && controllers.contains(&THEIRS),
        "status parents after the echo: {controllers:?}"
    );
    ensure!(
        is_true(&parents[0]["conditions"], "Accepted"),
        "our entry lost Accepted: {parents}"
    );
    wait_status(env, "/", 200)?;
    println!("    another controller's route status: counted as an echo, both entries kept");
    env.admin.run(&[
        "-n",
        NS,
        "patch",
        "httproute",
        "echo",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/status/parents/1"}]"#,
    ])?;
    Ok(())
}
