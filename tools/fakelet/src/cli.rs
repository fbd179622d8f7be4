//! Command line.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use crate::launch::LaunchArgs;

#[derive(Debug, clap::Parser)]
#[command(
    name = "coxswain-fakelet",
    version,
    about = "A stand-in kubelet for tests: runs pods as local processes, one network namespace per pod."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Register the node and run the pods bound to it (run this inside the
    /// node's network namespace).
    Run(RunArgs),
    /// Internal: set up a container's mounts, then exec its program.
    Launch(LaunchArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Node name to register.
    #[arg(long, env = "FAKELET_NODE_NAME", default_value = "coxswain-node")]
    pub node_name: String,
    /// The node's address (InternalIP); the kubelet port listens here.
    #[arg(long, env = "FAKELET_NODE_IP")]
    pub node_ip: Ipv4Addr,
    /// Pod addresses come from this range; its first host address goes to the bridge.
    #[arg(long, default_value = "10.244.0.0/24")]
    pub pod_cidr: String,
    /// Bridge the pods' veths join (created if missing).
    #[arg(long, default_value = "cxbr0")]
    pub bridge: String,
    /// HTTPS port for the apiserver (container logs).
    #[arg(long, default_value_t = 10250)]
    pub port: u16,
    /// Address the HTTPS port binds to (default: the node IP).
    #[arg(long)]
    pub listen_address: Option<IpAddr>,
    /// PATTERN=PATH [ARGS...]: run PATH for images matching the glob PATTERN
    /// (repeatable; first match wins; ARGS apply when the container gives
    /// neither command nor args).
    #[arg(long = "image-map", value_name = "RULE")]
    pub image_map: Vec<String>,
    /// A file of image map rules, one per line.
    #[arg(long, value_name = "FILE")]
    pub image_map_file: Option<PathBuf>,
    /// Where volumes and container logs live.
    #[arg(long, default_value = "/run/coxswain-fakelet")]
    pub state_dir: PathBuf,
    /// Longest termination grace honoured, in seconds.
    #[arg(long, default_value_t = 3)]
    pub max_grace_seconds: u64,
    /// Pods capacity reported for the node.
    #[arg(long, default_value_t = 110)]
    pub max_pods: u32,
    /// Act as the cluster's load balancer (a test stand-in): give every
    /// LoadBalancer Service an address from this IPv4 CIDR and route it to
    /// the Service's ready pods on this node. Off by default.
    #[arg(long, value_name = "CIDR")]
    pub load_balancer_pool: Option<String>,
}
