//! The programs the tests run: coxswain and the fakelet from this workspace,
//! echo-basic and the Kubernetes binaries from the cache outside the repo.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

pub struct Workspace {
    pub coxswain: PathBuf,
    pub fakelet: PathBuf,
}

/// Builds `coxswain` and `coxswain-fakelet` into the target directory and
/// profile this test binary was built in (usually a no-op under
/// `cargo test --workspace`, which builds them anyway), so the tests always
/// run the current code. `COXSWAIN_E2E_COXSWAIN_BIN` and
/// `COXSWAIN_E2E_FAKELET_BIN` point at prebuilt binaries instead.
pub fn workspace(repo: &Path) -> anyhow::Result<Workspace> {
    if let (Ok(coxswain), Ok(fakelet)) = (
        std::env::var("COXSWAIN_E2E_COXSWAIN_BIN"),
        std::env::var("COXSWAIN_E2E_FAKELET_BIN"),
    ) {
        return Ok(Workspace {
            coxswain: coxswain.into(),
            fakelet: fakelet.into(),
        });
    }
    // <target>/<profile>/deps/e2e-<hash>
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .context("test binary is not in <target>/<profile>/deps")?;
    let target = profile_dir.parent().context("no target directory")?;
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("no profile name")?;
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let started = Instant::now();
    let status = Command::new(&cargo)
        .current_dir(repo)
        .env("CARGO_TARGET_DIR", target)
        .args([
            "build",
            "--quiet",
            "--profile",
            profile,
            "-p",
            "coxswain",
            "-p",
            "coxswain-fakelet",
        ])
        .status()
        .with_context(|| format!("cannot run {cargo}"))?;
    if !status.success() {
        bail!("cargo build -p coxswain -p coxswain-fakelet failed ({status})");
    }
    eprintln!(
        "[e2e] coxswain and fakelet built in {:.1}s ({})",
        started.elapsed().as_secs_f64(),
        profile_dir.display()
    );
    Ok(Workspace {
        coxswain: profile_dir.join("coxswain"),
        fakelet: profile_dir.join("coxswain-fakelet"),
    })
}

/// echo-basic, built once into the cache by tools/fakelet/build-echo-basic.sh.
pub fn echo_basic(repo: &Path) -> anyhow::Result<PathBuf> {
    run_script(repo, "tools/fakelet/build-echo-basic.sh", &[])?;
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .context("neither XDG_CACHE_HOME nor HOME is set")?;
    Ok(cache.join("coxswain/bin/echo-basic"))
}

/// The cached kube-apiserver, controller manager, etcd and kubectl. The first
/// run on a machine builds them from Go modules (about 17 minutes); later
/// runs find them in ~/.cache/coxswain/k8s/<version>/bin.
pub fn kubernetes(repo: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    eprintln!("[e2e] scripts/cluster.sh build (cached; the first run on a machine takes ~17 min)");
    run_script(repo, "scripts/cluster.sh", &["build"])?;
    eprintln!(
        "[e2e] kubernetes binaries ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn run_script(repo: &Path, script: &str, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(repo.join(script))
        .args(args)
        .current_dir(repo)
        .status()
        .with_context(|| format!("cannot run {script}"))?;
    if !status.success() {
        bail!("{script} {} failed ({status})", args.join(" "));
    }
    Ok(())
}
