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
            reset_run_dir(&run_dir)?;
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

    /// `scripts/cluster.sh stop-apiserver`: etcd and the rest keep running.
    pub fn stop_apiserver(&self) -> anyhow::Result<()> {
        cluster_sh(&self.repo, &self.env(), "stop-apiserver").map(drop)
    }

    /// `scripts/cluster.sh start-apiserver`: returns once /readyz answers ok.
    pub fn start_apiserver(&self) -> anyhow::Result<()> {
        cluster_sh(&self.repo, &self.env(), "start-apiserver").map(drop)
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
    clean_where(repo, root, |pid| !process_alive(pid));
}

/// Tears down the instance a run of process `pid` left behind, if that
/// process is gone (an exit trap's safety net). Other instances, and one
/// whose process still runs, are never touched.
pub fn clean_left_by(repo: &Path, root: &Path, pid: u32) {
    let pid = pid.to_string();
    clean_where(repo, root, |claimed| {
        claimed == pid && !process_alive(claimed)
    });
}

/// Tears down the claimed instances for whose claiming pid `gone` holds.
fn clean_where(repo: &Path, root: &Path, gone: impl Fn(&str) -> bool) {
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
        if !gone(pid.trim()) {
            continue;
        }
        eprintln!(
            "[e2e] cleaning up instance {octet} left by a run that is gone (pid {})",
            pid.trim()
        );
        let run_dir = root.join(format!("run-{octet}"));
        stop_stale_fakelet(&run_dir);
        let _ = cluster_sh(repo, &instance_env(&run_dir, octet), "down");
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

/// A zombie (killed, not yet reaped by its parent) counts as gone.
fn process_alive(pid: &str) -> bool {
    if pid.is_empty() {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ...": the state follows the last ')'.
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X') | None)
}

/// Empties a run directory but keeps the fakelet's state: its records of pod
/// namespaces let the next fakelet remove what a killed one left.
fn reset_run_dir(run_dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(run_dir)?;
    for entry in std::fs::read_dir(run_dir)?.flatten() {
        if entry.file_name() == "fakelet" {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
    Ok(())
}

/// SIGTERM to a fakelet a killed run left, so it removes its pods'
/// namespaces (`cluster.sh down` would SIGKILL it). Only a process whose
/// command line names this run's fakelet state dir is signalled.
fn stop_stale_fakelet(run_dir: &Path) {
    let Ok(pid) = std::fs::read_to_string(run_dir.join("fakelet.pid")) else {
        return;
    };
    let pid = pid.trim();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let state_dir = run_dir.join("fakelet").display().to_string();
    let ours = String::from_utf8_lossy(&cmdline).contains(&state_dir);
    let Ok(raw) = pid.parse::<i32>() else { return };
    if !ours || !process_alive(pid) {
        return;
    }
    let pid_t = nix::unistd::Pid::from_raw(raw);
    let _ = nix::sys::signal::kill(pid_t, nix::sys::signal::Signal::SIGTERM);
    let _ = crate::poll::until(
        "stale fakelet stopped",
        std::time::Duration::from_secs(30),
        || Ok((!process_alive(pid)).then_some(())),
    );
}
