//! Long-running children (fakelet, controller) that are stopped on drop.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A child process logging to a file; SIGTERM, then SIGKILL after `grace`, on drop.
pub struct Background {
    pub name: String,
    pub log: PathBuf,
    child: Child,
    grace: Duration,
}

impl Background {
    pub fn spawn(
        name: &str,
        mut command: Command,
        log: &Path,
        grace: Duration,
    ) -> anyhow::Result<Self> {
        let out = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        command.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {name}: {command:?}"))?;
        // For the next run's clean-up, should this one be killed outright.
        std::fs::write(log.with_extension("pid"), child.id().to_string())?;
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            child,
            grace,
        })
    }

    /// The process id (`ip netns exec` and `env` exec into the program, so
    /// this is the program itself).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails when the process already ended (with the tail of its log).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            anyhow::bail!(
                "{} exited ({status}); log tail:\n{}",
                self.name,
                self.log_tail(30)
            );
        }
        Ok(())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGTERM, wait up to the grace period, then SIGKILL.
    pub fn stop(&mut self) {
        let _ = std::fs::remove_file(self.log.with_extension("pid"));
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + self.grace;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            crate::poll::pause(Duration::from_millis(50));
        }
        eprintln!(
            "[e2e] {} did not stop in {:?}; killing it",
            self.name, self.grace
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}
