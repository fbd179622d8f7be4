//! A second "node" for a second controller replica: its own network
//! namespace, joined to the cluster's node namespace by a veth pair. The
//! proxy binds Gateway addresses without SO_REUSEPORT, so two replicas
//! cannot both serve one address inside one namespace; here each has its
//! own copy of the pool's local route. The node namespace forwards between
//! the link and the pod bridge, so the replica reaches the API server (a
//! local address of the node namespace) and the pods.

use std::process::Command;

use anyhow::{Context, bail};

/// Removed (with its veth pair) on drop; stop processes inside it first.
pub struct ReplicaNetns {
    pub name: String,
}

impl ReplicaNetns {
    /// `<node_netns>-r`, linked by `10.215.<octet>.0/30` (node side .1,
    /// replica side .2, the replica's default route). `local_route` gets
    /// a `local` route on lo, as the node namespace has for the pool.
    pub fn create(node_netns: &str, octet: u8, local_route: &str) -> anyhow::Result<Self> {
        let name = format!("{node_netns}-r");
        // Left by a run that was killed: this octet is ours now.
        remove(&name);
        let node_veth = format!("cxe2e-{octet}r");
        let node_ip = format!("10.215.{octet}.1");
        let replica_ip = format!("10.215.{octet}.2");
        ip(&["netns", "add", &name])?;
        let namespace = Self { name };
        let name = namespace.name.as_str();
        ip(&["-n", node_netns, "link", "del", &node_veth]).ok();
        ip(&[
            "-n", node_netns, "link", "add", &node_veth, "type", "veth", "peer", "name", "eth0",
            "netns", name,
        ])?;
        ip(&[
            "-n",
            node_netns,
            "addr",
            "add",
            &format!("{node_ip}/30"),
            "dev",
            &node_veth,
        ])?;
        ip(&["-n", node_netns, "link", "set", &node_veth, "up"])?;
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        ip(&[
            "-n",
            name,
            "addr",
            "add",
            &format!("{replica_ip}/30"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", name, "link", "set", "eth0", "up"])?;
        ip(&["-n", name, "route", "add", "default", "via", &node_ip])?;
        ip(&[
            "-n",
            name,
            "route",
            "replace",
            "local",
            local_route,
            "dev",
            "lo",
        ])?;
        // Pods answer through the node namespace: it must route for us.
        run(Command::new("ip").args([
            "netns",
            "exec",
            node_netns,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]))?;
        Ok(namespace)
    }
}

impl Drop for ReplicaNetns {
    fn drop(&mut self) {
        remove(&self.name);
    }
}

/// Kills what still runs inside `name` (only ever started by these tests)
/// and deletes the namespace; its veth end takes the peer with it.
fn remove(name: &str) {
    if !std::path::Path::new("/run/netns").join(name).exists() {
        return;
    }
    let pids = Command::new("ip")
        .args(["netns", "pids", name])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = Command::new("ip").args(["netns", "del", name]).status();
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    run(Command::new("ip").args(args))
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let output = command
        .output()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
