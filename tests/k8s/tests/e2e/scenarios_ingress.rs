//! Classic Ingress on the controller's proxy: an IngressClass of ours and
//! an Ingress in the demo namespace are served on the ingress HTTP port
//! (set for the whole run in `setup::start_controller`), unmatched paths
//! answer 404, and status.loadBalancer is written back.

use std::net::SocketAddr;

use anyhow::{anyhow, ensure};
use coxswain_k8s_tests::poll;

use crate::fixtures::{CAP, NS, ensure_demo};
use crate::setup::{Env, INGRESS_HTTP_PORT, INGRESS_STATUS_ADDRESS};

fn class_and_ingress() -> String {
    format!(
        r#"apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: coxswain-e2e
spec:
  controller: coxswain-labs.dev/gateway-controller
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: classic
  namespace: {NS}
spec:
  ingressClassName: coxswain-e2e
  rules:
    - http:
        paths:
          - path: /classic
            pathType: Prefix
            backend:
              service:
                name: echo
                port:
                  number: 80
"#
    )
}

pub fn ingress_served_with_load_balancer_status(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    env.admin.apply(&class_and_ingress())?;
    let address: SocketAddr = format!("{INGRESS_STATUS_ADDRESS}:{INGRESS_HTTP_PORT}").parse()?;

    let response = poll::until("GET /classic on the ingress port -> 200", CAP, || {
        let response = env.http.get(address, "/classic/x", &[])?;
        if response.status == 200 {
            Ok(Some(response))
        } else {
            Err(anyhow!("got {}", response.status))
        }
    })?;
    ensure!(
        response.echo_pod().is_some_and(|p| p.starts_with("echo")),
        "not an echo pod's answer: {}",
        response.body
    );
    // Element-wise prefix: /classical is not under /classic.
    let other = env.http.get(address, "/classical", &[])?;
    ensure!(other.status == 404, "/classical answered {}", other.status);

    poll::until("Ingress status.loadBalancer written", CAP, || {
        let ingress = env.admin.get_json(&["-n", NS, "ingress", "classic"])?;
        let lb = &ingress["status"]["loadBalancer"]["ingress"][0];
        let ip_ok = lb["ip"].as_str() == Some(INGRESS_STATUS_ADDRESS);
        let port_ok = lb["ports"][0]["port"].as_i64() == Some(i64::from(INGRESS_HTTP_PORT));
        Ok((ip_ok && port_ok).then_some(()))
    })?;

    // Deleted: nothing of ours is left, so the ingress port is closed again.
    env.admin.run(&["-n", NS, "delete", "ingress", "classic"])?;
    env.admin.run(&["delete", "ingressclass", "coxswain-e2e"])?;
    poll::until("the ingress port to close", CAP, || {
        Ok(env
            .http
            .get(address, "/classic", &[])
            .is_err()
            .then_some(()))
    })?;
    Ok(())
}
