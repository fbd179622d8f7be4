//! Command-line interface.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Coxswain: a Kubernetes Gateway API implementation.
///
/// In standalone mode Coxswain reads Gateway API objects (GatewayClass,
/// Gateway, ListenerSet, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute,
/// BackendTLSPolicy, ReferenceGrant), classic Ingress and IngressClass,
/// and the core objects they refer to
/// (Service, EndpointSlice, Namespace, Secret, ConfigMap) from a directory
/// of YAML or JSON files, and serves them. Edits are applied live.
#[derive(Debug, Parser)]
#[command(name = "coxswain", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Gateways defined in a config directory, reloading on change.
    Run(RunArgs),
    /// Load and translate a config directory, print each object's status;
    /// or, with `--diff`, what changes between two config directories.
    ///
    /// Exit status: 0 when every object is accepted, 1 when something is
    /// rejected, 2 when a file cannot be loaded. With `--diff`: 0 when the
    /// two directories serve the same, 1 when they differ, 2 when a file
    /// cannot be loaded.
    Check(CheckArgs),
    /// Show what the gateway does with one request: the socket and
    /// listener that take it, the rule that answers (and why every other
    /// rule of that listener does not), its filters in the order they run
    /// and the backends it may go to.
    ///
    /// The request is written as for curl: `[METHOD] URL [-H 'name: value']...`.
    /// Exit status: 0 when a rule takes the request, 1 when none does,
    /// 2 when the config or the request cannot be read.
    Explain(crate::explain::ExplainArgs),
    /// Run a test backend that answers every request with a JSON
    /// description of what it received.
    Echo(EchoArgs),
    /// Run as a Kubernetes controller: watch the API server, serve the
    /// Gateways of our classes, write their status (when leading).
    Controller(crate::controller::ControllerArgs),
    /// Run as a dedicated pool's proxy: serve the config the controller
    /// streams for this pool's Gateway (mutual TLS, no Kubernetes
    /// credentials), and the last acknowledged one from `--state-dir`
    /// while the controller is unreachable.
    Proxy(crate::proxy_cmd::ProxyCmdArgs),
    /// Convert classic Ingress manifests to Gateway API: a GatewayClass,
    /// one Gateway (an HTTP listener, an HTTPS listener per `tls` host),
    /// HTTPRoutes per Ingress host and the Coxswain resources the
    /// annotations map to. YAML goes to stdout (or `--output DIR`), a
    /// report of everything not carried over exactly to stderr.
    ///
    /// Exit status: 0 when everything mapped, 1 when something did not
    /// (the output is still written), 2 when the input cannot be read or
    /// the output cannot be written.
    Migrate(crate::migrate::MigrateArgs),
    /// Print Coxswain's CustomResourceDefinitions (YAML) generated from
    /// the Rust types.
    Crds,
}

impl Command {
    /// Commands that print a result and exit (not servers).
    pub fn prints(&self) -> bool {
        matches!(
            self,
            Command::Check(_) | Command::Explain(_) | Command::Crds | Command::Migrate(_)
        )
    }
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Directory of YAML/JSON files, read recursively and watched for changes.
    #[arg(long, short = 'c', value_name = "DIR")]
    pub config: PathBuf,
    /// Address listeners bind to when a Gateway has no spec.addresses.
    #[arg(long, default_value = "0.0.0.0", value_name = "IP")]
    pub bind_address: IpAddr,
    /// Admin endpoint: /healthz, /readyz, /config, /status, /metrics, the
    /// read-only console (/console/) and its JSON views (/api/v1/).
    #[arg(long, default_value = "127.0.0.1:9901", value_name = "ADDR")]
    pub admin_address: SocketAddr,
    /// GatewayClasses with this spec.controllerName are served.
    #[arg(long, default_value = coxswain_translate::DEFAULT_CONTROLLER_NAME, value_name = "NAME")]
    pub controller_name: String,
    #[command(flatten)]
    pub proxy: crate::proxy_args::ProxyArgs,
    #[command(flatten)]
    pub ingress: crate::ingress_args::IngressArgs,
    /// Also run the built-in echo backend on this address (handy for trying
    /// things out: one command gives a gateway and a backend).
    #[arg(long, value_name = "ADDR")]
    pub echo: Option<SocketAddr>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Directory of YAML/JSON files to check (two with `--diff`).
    #[arg(value_name = "DIR", required = true, num_args = 1..=2)]
    pub dirs: Vec<PathBuf>,
    /// Print every object with its computed status instead of a summary:
    /// `json` and `yaml` as a List, `describe` as `kubectl describe` does.
    #[arg(long, short = 'o', value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
    /// Compare two config directories (`check --diff DIR_A DIR_B`): which
    /// listeners, routes and backends change from A to B, and how.
    #[arg(long)]
    pub diff: bool,
    /// GatewayClasses with this spec.controllerName are checked.
    #[arg(long, default_value = coxswain_translate::DEFAULT_CONTROLLER_NAME, value_name = "NAME")]
    pub controller_name: String,
    #[command(flatten)]
    pub ingress: crate::ingress_args::IngressArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OutputFormat {
    Json,
    Yaml,
    /// Each object's conditions as a table, per parent and ancestor.
    Describe,
}

#[derive(Debug, clap::Args)]
pub struct EchoArgs {
    /// Address to listen on (HTTP/1.1 and cleartext HTTP/2).
    #[arg(long, default_value = "127.0.0.1:3000", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Name reported as `pod` (default: $POD_NAME, else "echo").
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}
