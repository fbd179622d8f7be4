//! Helpers for the end-to-end tests on a real control plane: our own
//! `scripts/cluster.sh` instance, the fakelet and `coxswain controller` as
//! child processes, kubectl, and an HTTP client that runs inside the node's
//! network namespace. See docs/kubernetes.md.

pub mod binaries;
pub mod cluster;
pub mod env;
pub mod kubectl;
pub mod netns_http;
pub mod poll;
pub mod procs;
pub mod replica_netns;
pub mod service_vip;

use std::path::PathBuf;

/// The repository root (this crate lives in tests/k8s).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}
