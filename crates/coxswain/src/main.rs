//! The `coxswain` binary: thin wiring of provider, translator and proxy.

// Input (files, API objects, requests) must never panic the gateway.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod admin;
mod allocator;
mod check;
mod cli;
mod conditions;
mod controller;
mod crds_cmd;
mod duration;
mod echo;
mod explain;
mod http_server;
mod ingress_args;
mod migrate;
mod proxy_args;
mod proxy_cmd;
mod run;
mod tracing_args;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Reloads allocate and free many small objects; mimalloc does that faster
/// than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if cli.command.prints() {
        end_quietly_on_a_closed_pipe();
    }
    match cli.command {
        cli::Command::Check(args) => check::check(&args),
        cli::Command::Explain(args) => explain::explain(&args),
        cli::Command::Run(args) => with_runtime(args.proxy.worker_threads, run::run(args)),
        cli::Command::Echo(args) => with_runtime(0, echo::serve_forever(args)),
        cli::Command::Controller(args) => {
            with_runtime(args.proxy.worker_threads, controller::run(args))
        }
        cli::Command::Proxy(args) => with_runtime(args.proxy.worker_threads, proxy_cmd::run(args)),
        cli::Command::Crds => crds_cmd::print(),
        cli::Command::Migrate(args) => migrate::migrate(&args),
    }
}

/// Runs `future` on a multi-threaded runtime of `workers` threads (0: one
/// per core).
fn with_runtime(workers: usize, future: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if workers > 0 {
        builder.worker_threads(workers);
    }
    builder.on_thread_park(allocator::collect_when_idle);
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(future) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A printing command piped into `head` ends when the pipe closes, as other
/// command-line tools do (killed by SIGPIPE), instead of panicking in
/// `println!`. Only for those: the servers must keep SIGPIPE ignored, or a
/// peer closing a socket would kill them.
fn end_quietly_on_a_closed_pipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: called before any other thread exists, and SIG_DFL runs no
    // code of ours.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}
