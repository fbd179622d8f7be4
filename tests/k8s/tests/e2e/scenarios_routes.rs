//! HTTPRoute changes reach the data plane; references across namespaces
//! need a ReferenceGrant.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure};
use coxswain_k8s_tests::poll;

use crate::fixtures::{
    CAP, NS, condition_state, echo_route, ensure_demo, get, route_parent, wait_status,
};
use crate::setup::Env;

pub fn route_change_is_followed(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    env.admin.apply(&echo_route("/old"))?;
    wait_status(env, "/old", 200)?;
    wait_status(env, "/new", 404)?;

    // Apply -> first 200 on the new path, polled back to back (each request
    // is a fresh connection from the node namespace).
    let applied = Instant::now();
    env.admin.apply(&echo_route("/new"))?;
    let returned = applied.elapsed();
    let deadline = applied + Duration::from_secs(10);
    let first_ok = loop {
        if get(env, "/new").map(|r| r.status == 200).unwrap_or(false) {
            break applied.elapsed();
        }
        if Instant::now() >= deadline {
            bail!("/new never answered 200 within 10s of the apply");
        }
        poll::pause(Duration::from_millis(2));
    };
    wait_status(env, "/old", 404)?;
    println!(
        "    propagation: apply -> first 200 on /new {:.0} ms (kubectl apply itself took {:.0} ms, so {:.0} ms after it returned)",
        first_ok.as_secs_f64() * 1e3,
        returned.as_secs_f64() * 1e3,
        first_ok.saturating_sub(returned).as_secs_f64() * 1e3
    );
    ensure_demo(env)?;
    Ok(())
}

pub fn route_delete_gives_404(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    let deleted = Instant::now();
    env.admin.run(&["-n", NS, "delete", "httproute", "echo"])?;
    wait_status(env, "/", 404)?;
    println!(
        "    404 {:.0} ms after the delete",
        deleted.elapsed().as_secs_f64() * 1e3
    );
    ensure_demo(env)?;
    Ok(())
}

const BACKEND_NS: &str = "e2e-backend";

fn cross_namespace_manifests() -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: {BACKEND_NS}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: other
  namespace: {BACKEND_NS}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: other}}
  template:
    metadata:
      labels: {{app: other}}
    spec:
      containers:
        - name: echo
          image: echo-basic:v1.6.3
          env:
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
            - name: NAMESPACE
              valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}
          readinessProbe:
            httpGet: {{path: /, port: 3000}}
            periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: other
  namespace: {BACKEND_NS}
spec:
  selector: {{app: other}}
  ports:
    - port: 80
      targetPort: 3000
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: cross
  namespace: {NS}
spec:
  parentRefs:
    - name: demo
  rules:
    - matches:
        - path: {{type: PathPrefix, value: /cross}}
      backendRefs:
        - name: other
          namespace: {BACKEND_NS}
          port: 80
"#
    )
}

fn reference_grant() -> String {
    format!(
        r#"apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata:
  name: demo-routes
  namespace: {BACKEND_NS}
spec:
  from:
    - group: gateway.networking.k8s.io
      kind: HTTPRoute
      namespace: {NS}
  to:
    - group: ""
      kind: Service
"#
    )
}

fn resolved_refs(env: &Env) -> anyhow::Result<Option<(String, String)>> {
    let parent = route_parent(env, NS, "cross")?;
    Ok(condition_state(&parent["conditions"], "ResolvedRefs"))
}

pub fn cross_namespace_reference_grant(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    env.admin.apply(&cross_namespace_manifests())?;
    poll::until(
        "ResolvedRefs False/RefNotPermitted without a grant",
        CAP,
        || {
            let state = resolved_refs(env)?;
            Ok((state == Some(("False".into(), "RefNotPermitted".into()))).then_some(()))
        },
    )?;
    // The spec: requests to a rule whose backend is not permitted get 500.
    let denied = wait_status(env, "/cross", 500)?;

    env.admin.apply(&reference_grant())?;
    poll::until("ResolvedRefs True with the grant", CAP, || {
        let state = resolved_refs(env)?;
        Ok((state.as_ref().map(|s| s.0.as_str()) == Some("True")).then_some(()))
    })?;
    let allowed = wait_status(env, "/cross", 200)?;
    let namespace = allowed
        .echo_field("namespace")
        .ok_or_else(|| anyhow!("no namespace in {}", allowed.body))?;
    ensure!(
        namespace == BACKEND_NS,
        "answered from namespace {namespace:?}"
    );
    println!(
        "    without grant: RefNotPermitted, /cross -> {}; with grant: ResolvedRefs True, /cross -> 200 from {namespace}",
        denied.status
    );

    env.admin
        .run(&["-n", BACKEND_NS, "delete", "referencegrant", "demo-routes"])?;
    poll::until(
        "RefNotPermitted again after the grant is deleted",
        CAP,
        || Ok((resolved_refs(env)?.map(|s| s.1) == Some("RefNotPermitted".into())).then_some(())),
    )?;
    env.admin.run(&["-n", NS, "delete", "httproute", "cross"])?;
    Ok(())
}
