//! coxswain-stream-sim: one controller streaming one Gateway's config to N
//! proxy connections over mTLS on loopback, with M HTTPRoutes; measures the
//! time from a route change to the last proxy's ack, the controller's CPU
//! and memory per connected proxy, and the bytes each change sends. A
//! simulation: the controller and all proxies share one machine.

mod acks;
mod feed;
mod hub;
mod measure;
mod proxies;
mod report;
mod run;
mod world;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// The controller binary's allocator, so its memory is measured alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "coxswain-stream-sim",
    about = "Simulated config stream at scale: one controller, N proxies, M routes"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct RunArgs {
    /// HTTPRoutes attached to the one Gateway.
    #[arg(long, default_value_t = 5000)]
    routes: usize,
    /// Proxy connections (replicas of the Gateway's pool).
    #[arg(long, default_value_t = 100)]
    proxies: usize,
    /// Route changes, one at a time.
    #[arg(long, default_value_t = 200)]
    changes: usize,
    /// Give up when the initial sync or one change is not acked by every
    /// proxy within this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
}

#[derive(Subcommand)]
enum Command {
    /// The proxies' process (started by the simulation itself).
    #[command(hide = true)]
    Proxies {
        #[arg(long)]
        endpoint: String,
        #[arg(long)]
        server_name: String,
        #[arg(long)]
        credentials_dir: PathBuf,
        #[arg(long)]
        count: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("coxswain-stream-sim: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Some(Command::Proxies {
                endpoint,
                server_name,
                credentials_dir,
                count,
            }) => {
                proxies::run(proxies::Args {
                    endpoint,
                    server_name,
                    credentials_dir,
                    count,
                })
                .await
            }
            None => simulate(&cli.run).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coxswain-stream-sim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn simulate(args: &RunArgs) -> anyhow::Result<()> {
    if args.routes == 0 || args.proxies == 0 {
        anyhow::bail!("--routes and --proxies must be at least 1");
    }
    let settings = run::Settings {
        routes: args.routes,
        proxies: args.proxies,
        changes: args.changes,
        timeout: Duration::from_secs(args.timeout_secs),
    };
    let results = run::run(&settings).await?;
    print!("{}", report::render(&results));
    Ok(())
}
