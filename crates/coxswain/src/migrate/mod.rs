//! `coxswain migrate`: classic Ingress manifests to Gateway API — a
//! GatewayClass and one Gateway, HTTPRoutes per Ingress host, and the
//! Coxswain resources the annotations map to — with a report of
//! everything that could not be carried over exactly. See docs/ingress.md.

mod annotations;
mod backend;
mod canary;
mod checks;
mod cluster;
mod convert;
mod gateway;
mod output;
mod read;
mod report;
mod routes;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_annotations;

use std::path::PathBuf;
use std::process::ExitCode;

use convert::{Settings, convert};

/// Something did not map exactly (the output is still written).
const EXIT_NOT_MAPPED: u8 = 1;
/// The input cannot be read, or the output cannot be written.
const EXIT_FAILED: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// A directory of manifests (read recursively, as `run` reads one),
    /// or one or more YAML/JSON files.
    #[arg(
        value_name = "DIR|FILE",
        required_unless_present = "from_cluster",
        conflicts_with = "from_cluster"
    )]
    pub inputs: Vec<PathBuf>,
    /// Read the Ingresses, IngressClasses, Services and Secrets (metadata
    /// only) from the API server instead: KUBECONFIG, else the in-cluster
    /// config, as `controller` does.
    #[arg(long)]
    pub from_cluster: bool,
    /// Write one file per Ingress (and gateway.yaml) into this directory
    /// instead of one YAML stream on stdout.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Migrate only the Ingresses of this class (default: every Ingress).
    #[arg(long, value_name = "NAME")]
    pub ingress_class: Option<String>,
    /// Name of the GatewayClass written.
    #[arg(long, default_value = "coxswain", value_name = "NAME")]
    pub gateway_class: String,
    /// spec.controllerName of that GatewayClass.
    #[arg(long, default_value = coxswain_translate::DEFAULT_CONTROLLER_NAME, value_name = "NAME")]
    pub controller_name: String,
    /// Name of the Gateway every route attaches to.
    #[arg(long, default_value = "ingress", value_name = "NAME")]
    pub gateway: String,
    /// Namespace of that Gateway (default: the Ingresses' namespace when
    /// they share one, else `default`).
    #[arg(long, value_name = "NAMESPACE")]
    pub gateway_namespace: Option<String>,
    /// Port of the Gateway's HTTP listener.
    #[arg(long, default_value_t = 80, value_name = "PORT")]
    pub http_port: u16,
    /// Port of its HTTPS listeners (one per Ingress `tls` host).
    #[arg(long, default_value_t = 443, value_name = "PORT")]
    pub https_port: u16,
}

pub fn migrate(args: &MigrateArgs) -> ExitCode {
    let loaded = if args.from_cluster {
        cluster::load().map_err(|e| vec![format!("error: {e:#}")])
    } else {
        read::load(&args.inputs).map_err(|errors| errors.iter().map(ToString::to_string).collect())
    };
    let snapshot = match loaded {
        Ok(snapshot) => snapshot,
        Err(errors) => {
            for error in &errors {
                eprintln!("{error}");
            }
            eprintln!("{} error(s) reading the input", errors.len());
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let settings = Settings {
        ingress_class: args.ingress_class.clone(),
        gateway_class: args.gateway_class.clone(),
        controller_name: args.controller_name.clone(),
        gateway_name: args.gateway.clone(),
        gateway_namespace: args.gateway_namespace.clone(),
        http_port: args.http_port,
        https_port: args.https_port,
    };
    let migration = convert(&snapshot, &settings);
    let written = match &args.output {
        None => output::to_stdout(&migration.documents, &migration.report),
        Some(dir) => output::to_dir(dir, &migration.documents, &migration.report),
    };
    eprint!("{}", migration.report);
    if let Err(e) = written {
        eprintln!("error: {e:#}");
        return ExitCode::from(EXIT_FAILED);
    }
    if migration.report.anything_lost() {
        ExitCode::from(EXIT_NOT_MAPPED)
    } else {
        ExitCode::SUCCESS
    }
}
