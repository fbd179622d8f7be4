//! Pod networking with iproute2: one network namespace per pod, a veth pair
//! whose host end joins the node's bridge, the pod IP on `eth0` and a
//! default route via the bridge address.
//!
//! Every namespace created is recorded as a file under `<state dir>/netns/`,
//! and clean-up only touches recorded ones, so two fakelets (two clusters)
//! on one machine never remove each other's pods.

use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::ipam::Cidr;

/// Names of every pod netns this tool creates start with this.
pub const NETNS_PREFIX: &str = "cxp-";
/// Host-side veth names start with this.
const VETH_PREFIX: &str = "cxv";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNetwork {
    pub netns: String,
    pub host_veth: String,
    pub ip: Ipv4Addr,
}

/// Short, stable names for a pod on a node (interface names are limited to
/// 15 bytes).
pub fn names_for(node: &str, pod_uid: &str) -> (String, String) {
    let digest = Sha256::digest(format!("{node}/{pod_uid}").as_bytes());
    let short: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    (
        format!("{NETNS_PREFIX}{short}"),
        format!("{VETH_PREFIX}{short}"),
    )
}

async fn ip(args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .await
        .context("running ip (iproute2)")?;
    if !output.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Creates the bridge with the gateway address if it is not there yet.
pub async fn ensure_bridge(bridge: &str, cidr: Cidr) -> anyhow::Result<()> {
    if ip(&["link", "show", "dev", bridge]).await.is_err() {
        ip(&["link", "add", bridge, "type", "bridge"]).await?;
    }
    let address = format!("{}/{}", cidr.gateway(), cidr.prefix);
    let shown = ip(&["-4", "addr", "show", "dev", bridge]).await?;
    if !shown.contains(&format!("inet {address} ")) {
        ip(&["addr", "add", &address, "dev", bridge]).await?;
    }
    ip(&["link", "set", bridge, "up"]).await?;
    Ok(())
}

/// Creates the pod's namespace and wiring. On failure, whatever was created
/// is removed again.
pub async fn create(
    records: &Path,
    node: &str,
    pod_uid: &str,
    ip_addr: Ipv4Addr,
    cidr: Cidr,
    bridge: &str,
) -> anyhow::Result<PodNetwork> {
    let (netns, host_veth) = names_for(node, pod_uid);
    // A leftover from an earlier attempt would make `netns add` fail.
    remove(records, &netns).await;
    std::fs::create_dir_all(records)?;
    std::fs::write(records.join(&netns), pod_uid)?;
    if let Err(e) = ip(&["netns", "add", &netns]).await {
        let _ = std::fs::remove_file(records.join(&netns));
        return Err(e);
    }
    let network = PodNetwork {
        netns,
        host_veth,
        ip: ip_addr,
    };
    if let Err(e) = wire(&network, cidr, bridge).await {
        remove(records, &network.netns).await;
        return Err(e);
    }
    Ok(network)
}

async fn wire(net: &PodNetwork, cidr: Cidr, bridge: &str) -> anyhow::Result<()> {
    let ns = net.netns.as_str();
    let veth = net.host_veth.as_str();
    ip(&[
        "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
    ])
    .await?;
    ip(&["link", "set", veth, "master", bridge]).await?;
    ip(&["link", "set", veth, "up"]).await?;
    let address = format!("{}/{}", net.ip, cidr.prefix);
    ip(&["-n", ns, "addr", "add", &address, "dev", "eth0"]).await?;
    ip(&["-n", ns, "link", "set", "lo", "up"]).await?;
    ip(&["-n", ns, "link", "set", "eth0", "up"]).await?;
    let gateway = cidr.gateway().to_string();
    ip(&["-n", ns, "route", "add", "default", "via", &gateway]).await?;
    Ok(())
}

/// Kills what still runs in the namespace and deletes it (the veth pair goes
/// with it). Errors are ignored: this is cleanup.
pub async fn remove(records: &Path, netns: &str) {
    if let Ok(pids) = ip(&["netns", "pids", netns]).await {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let _ = ip(&["netns", "del", netns]).await;
    let _ = std::fs::remove_file(records.join(netns));
}

/// Removes the pod namespaces an earlier run recorded, and stray host veths
/// (those live in this node's namespace only).
pub async fn remove_leftovers(records: &Path) -> anyhow::Result<usize> {
    let leftovers: Vec<String> = match std::fs::read_dir(records) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with(NETNS_PREFIX))
            .collect(),
        Err(_) => Vec::new(),
    };
    for netns in &leftovers {
        remove(records, netns).await;
    }
    let links = ip(&["-o", "link", "show"]).await?;
    for name in links
        .lines()
        .filter_map(|line| line.split(':').nth(1))
        .map(|name| name.trim().split('@').next().unwrap_or(""))
        .filter(|name| name.starts_with(VETH_PREFIX))
    {
        let _ = ip(&["link", "del", name]).await;
    }
    Ok(leftovers.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_short_and_distinct() {
        let uid = "0b6f0c0e-1111-2222-3333-444455556666";
        let (ns, veth) = names_for("node-a", uid);
        assert_eq!(names_for("node-a", uid).0, ns);
        assert!(ns.starts_with(NETNS_PREFIX));
        assert!(veth.len() <= 15, "{veth}");
        assert_ne!(names_for("node-a", "other").0, ns);
        assert_ne!(names_for("node-b", uid).0, ns);
    }
}
