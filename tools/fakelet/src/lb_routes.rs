//! The load-balancer stand-in's data path, with iproute2 in the node's
//! network namespace (where the fakelet runs):
//!
//! - a node route `ADDR/32` to the Service's ready endpoint pods (one
//!   nexthop each, multipath when several), or `unreachable` when none is
//!   ready, so a client fails fast instead of leaving through the default
//!   route;
//! - in each endpoint pod's namespace, `local ADDR dev lo`, so the pod
//!   accepts packets for the address on whatever socket listens on the
//!   wildcard address.
//!
//! Node routes carry protocol number [`ROUTE_PROTO`], so the ones an
//! earlier run left behind can be found and flushed.

use std::fmt;
use std::net::Ipv4Addr;

use tokio::process::Command;

use crate::ipam::Cidr;

/// Routing protocol number marking this stand-in's node routes.
pub const ROUTE_PROTO: &str = "250";

#[derive(Debug)]
pub enum RouteError {
    /// `ip` could not be started.
    Spawn(std::io::Error),
    /// `ip` ran and failed.
    Failed { command: String, stderr: String },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::Spawn(e) => write!(f, "running ip (iproute2): {e}"),
            RouteError::Failed { command, stderr } => write!(f, "ip {command}: {stderr}"),
        }
    }
}

impl std::error::Error for RouteError {}

async fn ip(args: &[String]) -> Result<(), RouteError> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(RouteError::Spawn)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(RouteError::Failed {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

fn words(text: &[&str]) -> Vec<String> {
    text.iter().map(|w| (*w).to_string()).collect()
}

/// The arguments of `ip` for the node route of `address` over `nexthops`.
pub fn node_route_args(address: Ipv4Addr, nexthops: &[Ipv4Addr]) -> Vec<String> {
    let dest = format!("{address}/32");
    let mut args = words(&["route", "replace"]);
    if nexthops.is_empty() {
        args.push("unreachable".into());
    }
    // `nexthop` takes the rest of the line, so the protocol goes first.
    args.extend([dest, "proto".into(), ROUTE_PROTO.into()]);
    match nexthops {
        [] => {}
        [one] => args.extend(["via".into(), one.to_string()]),
        many => {
            for hop in many {
                args.extend(["nexthop".into(), "via".into(), hop.to_string()]);
            }
        }
    }
    args
}

/// Points `address` at `nexthops` (unreachable when empty).
pub async fn set_node_route(address: Ipv4Addr, nexthops: &[Ipv4Addr]) -> Result<(), RouteError> {
    ip(&node_route_args(address, nexthops)).await
}

/// Removes the node route of `address`, whatever its type.
pub async fn delete_node_route(address: Ipv4Addr) -> Result<(), RouteError> {
    let dest = format!("{address}/32");
    ip(&words(&["route", "del", &dest, "proto", ROUTE_PROTO])).await
}

/// Removes every node route this stand-in (or an earlier run) installed in
/// the pool.
pub async fn flush_node_routes(pool: Cidr) -> Result<(), RouteError> {
    let root = format!("{}/{}", pool.network, pool.prefix);
    for kind in ["unicast", "unreachable"] {
        ip(&words(&[
            "route",
            "flush",
            "root",
            &root,
            "proto",
            ROUTE_PROTO,
            "type",
            kind,
        ]))
        .await?;
    }
    Ok(())
}

fn local_args(verb: &str, netns: &str, address: Ipv4Addr) -> Vec<String> {
    let dest = format!("{address}/32");
    words(&[
        "-n", netns, "route", verb, "local", &dest, "dev", "lo", "table", "local",
    ])
}

/// Makes the pod in `netns` accept packets for `address`.
pub async fn add_pod_local(netns: &str, address: Ipv4Addr) -> Result<(), RouteError> {
    ip(&local_args("replace", netns, address)).await
}

/// Undoes [`add_pod_local`] (fails when the pod's namespace is gone).
pub async fn delete_pod_local(netns: &str, address: Ipv4Addr) -> Result<(), RouteError> {
    ip(&local_args("del", netns, address)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(args: Vec<String>) -> String {
        args.join(" ")
    }

    #[test]
    fn node_routes_by_number_of_ready_endpoints() {
        let lb = Ipv4Addr::new(10, 216, 0, 2);
        let a = Ipv4Addr::new(10, 244, 0, 5);
        let b = Ipv4Addr::new(10, 244, 0, 6);
        assert_eq!(
            join(node_route_args(lb, &[])),
            "route replace unreachable 10.216.0.2/32 proto 250"
        );
        assert_eq!(
            join(node_route_args(lb, &[a])),
            "route replace 10.216.0.2/32 proto 250 via 10.244.0.5"
        );
        assert_eq!(
            join(node_route_args(lb, &[a, b])),
            "route replace 10.216.0.2/32 proto 250 nexthop via 10.244.0.5 nexthop via 10.244.0.6"
        );
    }

    #[test]
    fn pod_local_routes_go_to_the_local_table() {
        let lb = Ipv4Addr::new(10, 216, 0, 2);
        assert_eq!(
            join(local_args("replace", "cxp-0a", lb)),
            "-n cxp-0a route replace local 10.216.0.2/32 dev lo table local"
        );
    }
}
