//! `coxswain migrate --from-cluster`: Ingresses applied with kubectl are
//! read back from the API server (Secrets as metadata only: their data
//! never reaches the output) and migrated as from files.

use std::process::Command;

use anyhow::ensure;

use crate::fixtures::NS;
use crate::setup::Env;

/// An ingress-nginx class (not ours, so the controller leaves it alone),
/// a Service whose port is named, a labelled htpasswd Secret and an
/// Ingress using all three.
fn manifests() -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata:
  name: {NS}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx-e2e
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: v1
kind: Service
metadata:
  name: mig-web
  namespace: {NS}
spec:
  ports:
    - name: http
      port: 8080
---
apiVersion: v1
kind: Secret
metadata:
  name: mig-users
  namespace: {NS}
  labels:
    ingress.coxswain-labs.dev/auth-basic: "true"
stringData:
  auth: "admin:$apr1$e2e$NOT-A-REAL-HASH-MARKER"
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: mig-shop
  namespace: {NS}
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: mig-users
spec:
  ingressClassName: nginx-e2e
  rules:
    - host: shop.e2e.test
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: mig-web
                port:
                  name: http
"#
    )
}

pub fn migrate_from_cluster(env: &mut Env) -> anyhow::Result<()> {
    env.admin.apply(&manifests())?;
    let out = Command::new(&env.coxswain)
        .args(["migrate", "--from-cluster", "--ingress-class", "nginx-e2e"])
        .env("KUBECONFIG", &env.admin.kubeconfig)
        .output()?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    ensure!(
        out.status.code() == Some(0),
        "migrate --from-cluster exited {:?}: {stderr}",
        out.status.code()
    );
    ensure!(
        stderr.contains(&format!("Ingress {NS}/mig-shop: mapped"))
            && stderr.contains("1 Ingress(es) read"),
        "report: {stderr}"
    );
    // The port name was resolved through the Service read from the cluster.
    ensure!(
        stdout.contains("name: mig-shop-shop.e2e.test")
            && stdout.contains("name: mig-web\n      port: 8080")
            && stdout.contains("name: mig-shop-basic-auth"),
        "output: {stdout}"
    );
    ensure!(
        !stdout.contains("NOT-A-REAL-HASH-MARKER") && !stderr.contains("NOT-A-REAL-HASH-MARKER"),
        "Secret data reached the output"
    );
    env.admin
        .run(&["-n", NS, "delete", "ingress", "mig-shop"])?;
    env.admin.run(&["-n", NS, "delete", "service", "mig-web"])?;
    env.admin
        .run(&["-n", NS, "delete", "secret", "mig-users"])?;
    env.admin.run(&["delete", "ingressclass", "nginx-e2e"])?;
    Ok(())
}
