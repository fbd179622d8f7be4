//! kubectl as a subprocess, with one kubeconfig (identity).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

#[derive(Clone, Debug)]
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command.env("KUBECONFIG", &self.kubeconfig).args(args);
        command
    }

    /// Runs kubectl, feeding `input` on stdin when given; returns the raw output.
    pub fn output(&self, args: &[&str], input: Option<&str>) -> anyhow::Result<Output> {
        let mut command = self.command(args);
        command
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot run {}", self.bin.display()))?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes())?;
        }
        Ok(child.wait_with_output()?)
    }

    /// Runs kubectl and returns stdout; a non-zero exit is an error with stderr.
    pub fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        self.run_with_input(args, None)
    }

    pub fn run_with_input(&self, args: &[&str], input: Option<&str>) -> anyhow::Result<String> {
        let output = self.output(args, input)?;
        if !output.status.success() {
            bail!(
                "kubectl {} failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// `kubectl apply -f -` with the given manifests.
    pub fn apply(&self, yaml: &str) -> anyhow::Result<String> {
        self.run_with_input(&["apply", "-f", "-"], Some(yaml))
    }

    /// `kubectl get ... -o json`, parsed.
    pub fn get_json(&self, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let text = self.run(&all)?;
        serde_json::from_str(&text).context("kubectl printed invalid JSON")
    }
}

/// The condition of `type_` in `object.status.conditions`, if any.
pub fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<&'a Value> {
    conditions
        .as_array()?
        .iter()
        .find(|c| c["type"].as_str() == Some(type_))
}

/// True when the condition of `type_` has status "True".
pub fn is_true(conditions: &Value, type_: &str) -> bool {
    condition(conditions, type_).and_then(|c| c["status"].as_str()) == Some("True")
}
