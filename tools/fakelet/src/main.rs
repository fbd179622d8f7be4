//! coxswain-fakelet: a stand-in kubelet for tests (see README.md).

mod cli;
mod container;
mod env;
mod image_map;
mod ipam;
mod launch;
mod lb_addresses;
mod lb_mirror;
mod lb_plan;
mod lb_routes;
mod load_balancer;
mod logs;
mod netns;
mod node;
mod objects;
mod pod;
mod pods;
mod prepare;
mod probe;
mod run;
mod server;
mod status;
mod volumes;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.command {
        cli::Command::Launch(args) => launch::launch(&args),
        cli::Command::Run(args) => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
                )
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .init();
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(runtime) => runtime,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(run::run(args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
