//! The `launch` subcommand: the last step before a container's program.
//!
//! It runs as `ip netns exec <pod netns> unshare -m -- coxswain-fakelet
//! launch --bind SRC=DST ... -- PROGRAM ARGS...`, so it already sits in the
//! pod's network namespace and in a private mount namespace. It bind-mounts
//! the pod's volumes at their mount paths (invisible to other processes)
//! and then replaces itself with the program, keeping the pid the fakelet
//! watches and signals.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// SOURCE=TARGET: bind-mount a host path at TARGET.
    #[arg(long = "bind", value_name = "SOURCE=TARGET")]
    pub binds: Vec<String>,
    /// Working directory for the program.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn launch(args: &LaunchArgs) -> ExitCode {
    for bind in &args.binds {
        if let Err(e) = mount_bind(bind) {
            eprintln!("fakelet launch: {e}");
            return ExitCode::from(126);
        }
    }
    let Some((program, rest)) = args.command.split_first() else {
        eprintln!("fakelet launch: no program given");
        return ExitCode::from(126);
    };
    let mut command = Command::new(program);
    command.args(rest);
    if let Some(dir) = &args.workdir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("fakelet launch: workdir {}: {e}", dir.display());
        }
        command.current_dir(dir);
    }
    // Only returns on failure.
    let error = command.exec();
    eprintln!("fakelet launch: cannot execute {program}: {error}");
    ExitCode::from(127)
}

fn mount_bind(spec: &str) -> Result<(), String> {
    let (source, target) = spec
        .split_once('=')
        .ok_or_else(|| format!("--bind {spec:?} is not SOURCE=TARGET"))?;
    let (source, target) = (Path::new(source), Path::new(target));
    // A file mount (subPath to a file) needs a file to mount over.
    if source.is_file() {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        if !target.exists() {
            std::fs::write(target, b"").map_err(|e| format!("{}: {e}", target.display()))?;
        }
    } else {
        std::fs::create_dir_all(target).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    let status = Command::new("mount")
        .arg("--bind")
        .arg(source)
        .arg(target)
        .status()
        .map_err(|e| format!("running mount: {e}"))?;
    if !status.success() {
        return Err(format!(
            "mount --bind {} {} failed: {status}",
            source.display(),
            target.display()
        ));
    }
    Ok(())
}
