//! Coxswain's own filter kinds in Kubernetes mode: enforced on traffic,
//! their status written back, and a rotated htpasswd Secret followed
//! without touching the route.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use coxswain_k8s_tests::poll;

use crate::fixtures::{CAP, NS, condition_state, ensure_demo, wait_status};
use crate::setup::Env;

const USER: &str = "e2e";
/// `e2e:first-password` and `e2e:second-password`, base64.
const FIRST: (&str, &str) = ("first-password", "Basic ZTJlOmZpcnN0LXBhc3N3b3Jk");
const SECOND: (&str, &str) = ("second-password", "Basic ZTJlOnNlY29uZC1wYXNzd29yZA==");

/// An APR1 htpasswd line for USER, made by openssl as an operator would.
fn htpasswd(password: &str) -> anyhow::Result<String> {
    let out = Command::new("openssl")
        .args(["passwd", "-apr1", password])
        .output()
        .context("openssl passwd")?;
    if !out.status.success() {
        bail!("openssl passwd: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(format!("{USER}:{}", String::from_utf8(out.stdout)?.trim()))
}

fn secret(password: &str) -> anyhow::Result<String> {
    Ok(format!(
        r#"apiVersion: v1
kind: Secret
metadata:
  name: e2e-htpasswd
  namespace: {NS}
  labels:
    ingress.coxswain-labs.dev/auth-basic: "true"
stringData:
  auth: '{}'
"#,
        htpasswd(password)?
    ))
}

fn manifests() -> String {
    format!(
        r#"apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: BasicAuth
metadata:
  name: e2e-basic
  namespace: {NS}
spec:
  secretRef: {{name: e2e-htpasswd}}
  realm: e2e
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: IpAccessControl
metadata:
  name: e2e-deny-all
  namespace: {NS}
spec:
  deny: [0.0.0.0/0, "::/0"]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: Compression
metadata:
  name: e2e-bad-type
  namespace: {NS}
spec:
  gzip: true
  types: [no-slash]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: e2e-authz
  namespace: {NS}
spec:
  protocol: HTTP
  backendRef: {{name: echo, port: 80}}
  timeout: 2s
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata:
  name: e2e-authz-nowhere
  namespace: {NS}
spec:
  protocol: HTTP
  backendRef: {{name: no-such-service, port: 80}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: filters
  namespace: {NS}
spec:
  parentRefs:
    - name: demo
  rules:
    - matches:
        - path: {{type: PathPrefix, value: /guarded}}
      filters:
        - type: ExtensionRef
          extensionRef: {{group: gateway.coxswain-labs.dev, kind: BasicAuth, name: e2e-basic}}
      backendRefs:
        - {{name: echo, port: 80}}
    - matches:
        - path: {{type: PathPrefix, value: /denied}}
      filters:
        - type: ExtensionRef
          extensionRef: {{group: gateway.coxswain-labs.dev, kind: IpAccessControl, name: e2e-deny-all}}
      backendRefs:
        - {{name: echo, port: 80}}
    - matches:
        - path: {{type: PathPrefix, value: /authz}}
      filters:
        - type: ExtensionRef
          extensionRef: {{group: gateway.coxswain-labs.dev, kind: CoxswainExternalAuth, name: e2e-authz}}
      backendRefs:
        - {{name: echo, port: 80}}
    - matches:
        - path: {{type: PathPrefix, value: /nowhere}}
      filters:
        - type: ExtensionRef
          extensionRef: {{group: gateway.coxswain-labs.dev, kind: CoxswainExternalAuth, name: e2e-authz-nowhere}}
      backendRefs:
        - {{name: echo, port: 80}}
    - matches:
        - path: {{type: PathPrefix, value: /missing}}
      filters:
        - type: ExtensionRef
          extensionRef: {{group: gateway.coxswain-labs.dev, kind: BasicAuth, name: not-there}}
      backendRefs:
        - {{name: echo, port: 80}}
"#
    )
}

/// Waits until GET `path` with `authorization` answers `status`.
fn wait_auth(env: &Env, path: &str, authorization: &str, status: u16) -> anyhow::Result<()> {
    let address = env.gateway.ok_or_else(|| anyhow!("no Gateway address"))?;
    poll::until(
        &format!("GET {path} with credentials -> {status}"),
        CAP,
        || {
            let response = env
                .http
                .get(address, path, &[("Authorization", authorization)])?;
            if response.status == status {
                Ok(Some(()))
            } else {
                Err(anyhow!("got {}", response.status))
            }
        },
    )
}

/// Waits until the filter resource's written status has `type_` as
/// (`status`, `reason`).
fn wait_condition(
    env: &Env,
    resource: &str,
    name: &str,
    type_: &str,
    expected: (&str, &str),
) -> anyhow::Result<()> {
    poll::until(
        &format!("{resource}/{name} {type_}={}/{}", expected.0, expected.1),
        CAP,
        || {
            let object = env.admin.get_json(&["-n", NS, resource, name])?;
            let state = condition_state(&object["status"]["conditions"], type_);
            let found = state
                .as_ref()
                .map(|(s, r)| (s.as_str(), r.as_str()) == expected)
                .unwrap_or(false);
            if found {
                Ok(Some(()))
            } else {
                Err(anyhow!("status is {state:?}"))
            }
        },
    )
}

pub fn filters_enforced_and_reported(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    env.admin.apply(&secret(FIRST.0)?)?;
    env.admin.apply(&manifests())?;

    wait_status(env, "/guarded", 401)?;
    wait_auth(env, "/guarded", FIRST.1, 200)?;
    wait_status(env, "/denied", 403)?;
    // An ExtensionRef that resolves to nothing is never skipped.
    wait_status(env, "/missing", 500)?;
    // The authorization service (echo answers 200: allowed) is a Service
    // resolved to its pods like any backend; one with no Service fails
    // closed.
    wait_status(env, "/authz", 200)?;
    wait_status(env, "/nowhere", 503)?;

    wait_condition(
        env,
        "basicauths",
        "e2e-basic",
        "Accepted",
        ("True", "Accepted"),
    )?;
    wait_condition(
        env,
        "basicauths",
        "e2e-basic",
        "ResolvedRefs",
        ("True", "ResolvedRefs"),
    )?;
    wait_condition(
        env,
        "ipaccesscontrols",
        "e2e-deny-all",
        "Accepted",
        ("True", "Accepted"),
    )?;
    wait_condition(
        env,
        "coxswainexternalauths",
        "e2e-authz",
        "Accepted",
        ("True", "Accepted"),
    )?;
    wait_condition(
        env,
        "coxswainexternalauths",
        "e2e-authz-nowhere",
        "ResolvedRefs",
        ("False", "BackendNotFound"),
    )?;
    // Compression fails open while invalid (a media type the schema cannot
    // rule out), and says so.
    wait_condition(
        env,
        "compressions",
        "e2e-bad-type",
        "Accepted",
        ("False", "Invalid"),
    )?;

    // The Secret is an input of the route: a new password takes over
    // without any change to the BasicAuth or the HTTPRoute.
    let rotated = Instant::now();
    env.admin.apply(&secret(SECOND.0)?)?;
    wait_auth(env, "/guarded", SECOND.1, 200)?;
    let followed = rotated.elapsed();
    wait_auth(env, "/guarded", FIRST.1, 401)?;
    println!(
        "    401 without credentials, 403 denied, 500 for a missing filter, ext-auth allowed and 503 without its Service; rotated password served {:.0} ms after the Secret apply",
        followed.as_secs_f64() * 1e3
    );

    env.admin
        .run(&["-n", NS, "delete", "httproute", "filters"])?;
    env.admin.run(&[
        "-n",
        NS,
        "delete",
        "basicauth/e2e-basic",
        "ipaccesscontrol/e2e-deny-all",
        "compression/e2e-bad-type",
        "coxswainexternalauth/e2e-authz",
        "coxswainexternalauth/e2e-authz-nowhere",
        "secret/e2e-htpasswd",
    ])?;
    Ok(())
}

const CLIENT_TRAFFIC: &str = r#"apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: ClientTrafficPolicy
metadata:
  name: e2e-proxy-protocol
  namespace: coxswain-demo
spec:
  targetRefs:
    - {group: gateway.networking.k8s.io, kind: Gateway, name: demo}
  proxyProtocol: {optional: true}
"#;

/// A ClientTrafficPolicy on the demo Gateway: its ancestor status is
/// written back, and with `optional: true` clients without a PROXY header
/// are still served.
pub fn client_traffic_policy_reported(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    env.admin.apply(CLIENT_TRAFFIC)?;
    poll::until("ClientTrafficPolicy accepted for Gateway demo", CAP, || {
        let policy =
            env.admin
                .get_json(&["-n", NS, "clienttrafficpolicies", "e2e-proxy-protocol"])?;
        let ancestor = &policy["status"]["ancestors"][0];
        let state = condition_state(&ancestor["conditions"], "Accepted");
        let named = ancestor["ancestorRef"]["name"].as_str() == Some("demo");
        if named && state.as_ref().map(|s| s.0.as_str()) == Some("True") {
            Ok(Some(()))
        } else {
            Err(anyhow!("ancestor {ancestor}"))
        }
    })?;
    wait_status(env, "/", 200)?;
    env.admin
        .run(&["-n", NS, "delete", "clienttrafficpolicy/e2e-proxy-protocol"])?;
    wait_status(env, "/", 200)?;
    Ok(())
}
