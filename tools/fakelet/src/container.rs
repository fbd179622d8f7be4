//! Runs one container as a local process inside the pod's network namespace
//! and restarts it according to the pod's restartPolicy.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use tokio::process::{Child, Command};
use tokio::sync::{Notify, watch};

use crate::image_map::Launch;
use crate::logs;
use crate::probe::{self, Readiness};
use crate::status::{PodRuntime, RunState};
use crate::volumes::Bind;

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    pub fn parse(text: Option<&str>) -> Self {
        match text {
            Some("Never") => RestartPolicy::Never,
            Some("OnFailure") => RestartPolicy::OnFailure,
            _ => RestartPolicy::Always,
        }
    }

    pub fn restarts(self, exit_code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// The pod's runtime state, shared by its container supervisors; `changed`
/// wakes the status reporter.
#[derive(Clone)]
pub struct Shared {
    pub runtime: Arc<Mutex<PodRuntime>>,
    pub changed: Arc<Notify>,
}

impl Shared {
    pub fn update<T>(&self, apply: impl FnOnce(&mut PodRuntime) -> T) -> T {
        let mut runtime = self.runtime.lock().unwrap_or_else(|e| e.into_inner());
        let result = apply(&mut runtime);
        self.changed.notify_one();
        result
    }
}

pub struct ContainerSpec {
    pub name: String,
    pub pod_name: String,
    pub launch: Launch,
    pub env: Vec<(String, String)>,
    pub binds: Vec<Bind>,
    pub workdir: Option<String>,
    pub netns: String,
    pub pod_dir: PathBuf,
    pub pod_ip: Ipv4Addr,
    pub restart_policy: RestartPolicy,
    pub readiness: Option<Readiness>,
    /// How long SIGTERM may take before SIGKILL.
    pub grace: Duration,
    /// This binary, for its `launch` subcommand.
    pub fakelet_exe: PathBuf,
}

fn command_for(spec: &ContainerSpec) -> Command {
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", &spec.netns, "unshare", "-m", "--"])
        .arg(&spec.fakelet_exe)
        .arg("launch");
    for bind in &spec.binds {
        let mut arg = std::ffi::OsString::from("--bind=");
        arg.push(&bind.source);
        arg.push("=");
        arg.push(&bind.target);
        command.arg(arg);
    }
    if let Some(dir) = &spec.workdir {
        command.arg(format!("--workdir={dir}"));
    }
    command
        .arg("--")
        .arg(&spec.launch.program)
        .args(&spec.launch.args)
        .env_clear()
        .env("PATH", DEFAULT_PATH)
        .env("HOSTNAME", &spec.pod_name)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn start(spec: &ContainerSpec, restart: u32) -> std::io::Result<Child> {
    let sink = logs::open_sink(&logs::run_log_path(&spec.pod_dir, &spec.name, restart)).await?;
    let mut child = command_for(spec).spawn()?;
    if let Some(out) = child.stdout.take() {
        tokio::spawn(logs::copy_lines(out, sink.clone()));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(logs::copy_lines(err, sink));
    }
    Ok(child)
}

/// SIGTERM, then SIGKILL once the grace period is over.
async fn terminate(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
        return status.ok();
    }
    let _ = child.kill().await;
    child.wait().await.ok()
}

fn terminated(status: Option<ExitStatus>, started_at: Timestamp) -> (RunState, i32) {
    use std::os::unix::process::ExitStatusExt;
    let signal = status.and_then(|s| s.signal());
    let exit_code = match (status.and_then(|s| s.code()), signal) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    };
    let reason = if exit_code == 0 { "Completed" } else { "Error" };
    let state = RunState::Terminated {
        exit_code,
        signal,
        reason: reason.to_string(),
        started_at,
        finished_at: Timestamp::now(),
    };
    (state, exit_code)
}

/// Polls the readiness probe forever, publishing changes.
async fn watch_readiness(shared: &Shared, spec: &ContainerSpec) {
    let Some(readiness) = &spec.readiness else {
        return std::future::pending().await;
    };
    tokio::time::sleep(readiness.initial_delay).await;
    let (mut passes, mut fails, mut ready) = (0u32, 0u32, false);
    loop {
        if probe::probe_once(spec.pod_ip, &readiness.check, readiness.timeout).await {
            passes += 1;
            fails = 0;
        } else {
            fails += 1;
            passes = 0;
        }
        let now_ready = if ready {
            fails < readiness.failure_threshold
        } else {
            passes >= readiness.success_threshold
        };
        if now_ready != ready {
            ready = now_ready;
            shared.update(|rt| {
                if let Some(c) = rt.container_mut(&spec.name) {
                    c.ready = ready;
                }
            });
        }
        tokio::time::sleep(readiness.period).await;
    }
}

/// Runs the container until `stop` fires (or its sender goes away).
pub async fn supervise(spec: ContainerSpec, shared: Shared, mut stop: watch::Receiver<bool>) {
    let mut backoff = FIRST_BACKOFF;
    let mut restart: u32 = 0;
    loop {
        let set_state = |state: RunState, ready: bool| {
            shared.update(|rt| {
                if let Some(c) = rt.container_mut(&spec.name) {
                    if matches!(state, RunState::Running { .. }) {
                        c.ever_started = true;
                    }
                    c.state = state;
                    c.ready = ready;
                }
            })
        };
        let began = Instant::now();
        let started_at = Timestamp::now();
        let exit = match start(&spec, restart).await {
            Ok(mut child) => {
                set_state(RunState::Running { started_at }, spec.readiness.is_none());
                tokio::select! {
                    status = child.wait() => status.ok(),
                    _ = stop.changed() => {
                        // No status update: a stopped fakelet must not report
                        // its pods Failed (the ReplicaSet would replace them).
                        terminate(&mut child, spec.grace).await;
                        return;
                    }
                    () = watch_readiness(&shared, &spec) => None,
                }
            }
            Err(e) => {
                tracing::warn!(container = %spec.name, "cannot start: {e}");
                None
            }
        };
        let (state, exit_code) = terminated(exit, started_at);
        tracing::info!(container = %spec.name, pod = %spec.pod_name, exit_code, "container exited");
        if !spec.restart_policy.restarts(exit_code) {
            set_state(state, false);
            let _ = stop.changed().await;
            return;
        }
        if began.elapsed() > MAX_BACKOFF {
            backoff = FIRST_BACKOFF;
        }
        restart += 1;
        let message = format!(
            "back-off {}s restarting failed container",
            backoff.as_secs()
        );
        shared.update(|rt| {
            if let Some(c) = rt.container_mut(&spec.name) {
                c.last_terminated = Some(state);
                c.restart_count = i32::try_from(restart).unwrap_or(i32::MAX);
                c.state = RunState::waiting("CrashLoopBackOff", Some(message));
                c.ready = false;
            }
        });
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policies() {
        assert!(RestartPolicy::parse(None).restarts(0));
        assert!(RestartPolicy::parse(Some("OnFailure")).restarts(1));
        assert!(!RestartPolicy::parse(Some("OnFailure")).restarts(0));
        assert!(!RestartPolicy::parse(Some("Never")).restarts(1));
    }

    #[test]
    fn exit_by_signal_maps_to_128_plus_signal() {
        use std::os::unix::process::ExitStatusExt;
        let (state, code) = terminated(Some(ExitStatus::from_raw(15)), Timestamp::now());
        assert_eq!(code, 143);
        assert!(matches!(
            state,
            RunState::Terminated {
                signal: Some(15),
                ..
            }
        ));
        let (_, code) = terminated(Some(ExitStatus::from_raw(3 << 8)), Timestamp::now());
        assert_eq!(code, 3);
    }
}
