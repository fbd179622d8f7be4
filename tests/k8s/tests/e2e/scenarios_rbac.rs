//! The chart's RBAC: enough for what the controller does, nothing more.

use anyhow::{anyhow, bail, ensure};

use crate::fixtures::NS;
use crate::setup::{Env, RELEASE_NAMESPACE};

/// `kubectl auth can-i` as the chart's ServiceAccount.
fn can(env: &Env, args: &[&str]) -> anyhow::Result<bool> {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let output = env.sa.output(&all, None)?;
    match String::from_utf8_lossy(&output.stdout).trim() {
        "yes" => Ok(true),
        "no" => Ok(false),
        other => Err(anyhow!("kubectl auth can-i {}: {other:?}", args.join(" "))),
    }
}

pub fn chart_rbac_is_enough_and_least(env: &mut Env) -> anyhow::Result<()> {
    // LoadBalancer mode applies a Service and a ServiceAccount server-side
    // (creating them the first time).
    let probe = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: rbac-probe, namespace: {NS}}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: rbac-probe, namespace: {NS}}}\n\
         spec: {{type: LoadBalancer, ports: [{{port: 80}}], selector: {{app.kubernetes.io/name: coxswain}}}}\n"
    );
    env.sa.run_with_input(
        &[
            "apply",
            "--server-side",
            "--field-manager=coxswain-e2e",
            "-f",
            "-",
        ],
        Some(&probe),
    )?;
    env.admin.run(&[
        "-n",
        NS,
        "delete",
        "service/rbac-probe",
        "serviceaccount/rbac-probe",
    ])?;

    let allowed: &[&[&str]] = &[
        &["watch", "gateways.gateway.networking.k8s.io", "-A"],
        &[
            "update",
            "httproutes.gateway.networking.k8s.io",
            "--subresource=status",
            "-A",
        ],
        &["list", "endpointslices.discovery.k8s.io", "-A"],
        &[
            "create",
            "leases.coordination.k8s.io",
            "-n",
            RELEASE_NAMESPACE,
        ],
        &[
            "update",
            "leases.coordination.k8s.io/coxswain-controller",
            "-n",
            RELEASE_NAMESPACE,
        ],
    ];
    let denied: &[&[&str]] = &[
        &["get", "secrets", "-A"],
        &["delete", "services", "-A"],
        &["update", "services", "-A"],
        &["get", "serviceaccounts", "-A"],
        &["create", "pods", "-A"],
        &["update", "gateways.gateway.networking.k8s.io", "-A"],
        &[
            "patch",
            "gateways.gateway.networking.k8s.io",
            "--subresource=status",
            "-A",
        ],
        &["create", "leases.coordination.k8s.io", "-n", "default"],
        &[
            "update",
            "leases.coordination.k8s.io/other",
            "-n",
            RELEASE_NAMESPACE,
        ],
    ];
    for args in allowed {
        ensure!(
            can(env, args)?,
            "the ServiceAccount cannot {}",
            args.join(" ")
        );
    }
    for args in denied {
        ensure!(
            !can(env, args)?,
            "the ServiceAccount can {} (more than it needs)",
            args.join(" ")
        );
    }
    // Everything above ran with the controller on this identity.
    let log = env.controller.log_text();
    if let Some(line) = log
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("forbidden"))
    {
        bail!("the controller was denied something: {line}");
    }
    println!(
        "    server-side apply created a Service and a ServiceAccount; {} allowed / {} denied checks as expected; no Forbidden in the controller log",
        allowed.len(),
        denied.len()
    );
    Ok(())
}
