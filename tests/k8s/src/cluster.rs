//! Our own instance of scripts/cluster.sh. Every run claims a free octet N
//! and derives everything from it: namespace `cxe2e-N`, host veth `cxe2e-Nh`,
//! node prefix `10.213.N`, state under `<root>/run-N`. So a developer's
//! cluster (and the conformance run's) is never touched, and a run killed
//! before its teardown is cleaned up by the next one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::kubectl::Kubectl;

/// Octets tried; 0..31 are left to the scripts' fixed defaults.
const OCTETS: std::ops::RangeInclusive<u8> = 32..=250;

pub struct Cluster {
    repo: PathBuf,
    root: PathBuf,
    pub octet: u8,
    pub run_dir: PathBuf,
    /// Set once `up` succeeded, so drop tears down.
    started: bool,
    pub admin: Kubectl,
}

impl Cluster {
    pub fn netns(&self) -> String {
        format!("cxe2e-{}", self.octet)
    }

    pub fn node_ip(&self) -> String {
        format!("10.213.{}.2", self.octet)
    }

    pub fn state(&self) -> PathBuf {
        self.run_dir.join("cluster")
    }

    pub fn ca_file(&self) -> PathBuf {
        self.state().join("pki/ca.crt")
    }

    fn env(&self) -> BTreeMap<&'static str, String> {
        instance_env(&self.run_dir, self.octet)
    }

    /// Claims an octet (cleaning up runs whose process is gone first).
    pub fn claim(repo: &Path, root: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(root)?;
        clean_stale(repo, root);
        let used = Command::new("ip").args(["-4", "-o", "addr"]).output()?;
        let used = String::from_utf8_lossy(&used.stdout).into_owned();
        for octet in OCTETS {
            if used.contains(&format!("10.213.{octet}.")) {
                continue;
            }
            // mkdir is atomic: two concurrent runs cannot both claim N.
            let claim = root.join(format!("claim-{octet}"));
            if std::fs::create_dir(&claim).is_err() {
                continue;
            }
            std::fs::write(claim.join("pid"), std::process::id().to_string())?;
            let run_dir = root.join(format!("run-{octet}"));
            let _ = std::fs::remove_dir_all(&run_dir);
            std::fs::create_dir_all(&run_dir)?;
            let kubeconfig = run_dir.join("cluster/kubeconfig");
            return Ok(Self {
                repo: repo.to_path_buf(),
                root: root.to_path_buf(),
                octet,
                run_dir,
                started: false,
                admin: Kubectl {
                    bin: PathBuf::from("kubectl"),
                    kubeconfig,
                },
            });
        }
        bail!("no free 10.213.N prefix in {OCTETS:?}")
    }

    /// `scripts/cluster.sh up`; takes kubectl from the exports it prints.
    pub fn up(&mut self) -> anyhow::Result<()> {
        self.started = true;
        let output = cluster_sh(&self.repo, &self.env(), "up")?;
        let path = output
            .lines()
            .find_map(|l| l.strip_prefix("export PATH="))
            .and_then(|p| p.split(':').next())
            .context("cluster.sh up printed no PATH export")?;
        self.admin.bin = PathBuf::from(path).join("kubectl");
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started
            && let Err(error) = cluster_sh(&self.repo, &self.env(), "down")
        {
            eprintln!("[e2e] cluster teardown failed: {error:#}");
        }
        let _ = std::fs::remove_dir_all(self.root.join(format!("claim-{}", self.octet)));
    }
}

fn instance_env(run_dir: &Path, octet: u8) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("COXSWAIN_NETNS", format!("cxe2e-{octet}")),
        ("COXSWAIN_NODE_PREFIX", format!("10.213.{octet}")),
        ("COXSWAIN_HOST_VETH", format!("cxe2e-{octet}h")),
        (
            "COXSWAIN_CLUSTER_STATE",
            run_dir.join("cluster").display().to_string(),
        ),
    ])
}

fn cluster_sh(
    repo: &Path,
    env: &BTreeMap<&'static str, String>,
    verb: &str,
) -> anyhow::Result<String> {
    let output = Command::new(repo.join("scripts/cluster.sh"))
        .arg(verb)
        .envs(env)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run scripts/cluster.sh")?;
    if !output.status.success() {
        bail!("scripts/cluster.sh {verb} failed ({})", output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Tears down instances whose claiming process no longer runs.
fn clean_stale(repo: &Path, root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(octet) = name
            .strip_prefix("claim-")
            .and_then(|n| n.parse::<u8>().ok())
        else {
            continue;
        };
        let pid = std::fs::read_to_string(entry.path().join("pid")).unwrap_or_default();
        let alive = !pid.trim().is_empty() && Path::new(&format!("/proc/{}", pid.trim())).exists();
        if alive {
            continue;
        }
        eprintln!(
            "[e2e] cleaning up instance {octet} left by a run that is gone (pid {})",
            pid.trim()
        );
        let run_dir = root.join(format!("run-{octet}"));
        let _ = cluster_sh(repo, &instance_env(&run_dir, octet), "down");
        let _ = std::fs::remove_dir_all(entry.path());
    }
}
