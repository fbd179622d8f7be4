//! coxswain-l4load: the L4 and WebSocket benchmarks' load generator and
//! echo origins.
//!
//! Load modes run `--concurrency` workers for `--duration` seconds on one
//! thread and print one JSON line; I/O errors are counted, never fatal.
//! Serve modes run until killed.

mod cli;
mod run;
mod serve;
mod tcp_conn;
mod tcp_stream;
mod tls;
mod tls_conn;
mod udp;
mod ws;
mod ws_frame;
mod ws_handshake;
mod ws_serve;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("coxswain-l4load: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::TcpConn(args) => tcp_conn::run(args).await.map(Some),
            Command::TcpStream(args) => tcp_stream::run(args).await.map(Some),
            Command::TlsConn(args) => tls_conn::run(args).await.map(Some),
            Command::Udp(args) => udp::run(args).await.map(Some),
            Command::Ws(args) => ws::run(args).await.map(Some),
            Command::ServeTcpEcho(args) => serve::tcp_echo(args).await.map(|()| None),
            Command::ServeUdpEcho(args) => serve::udp_echo(args).await.map(|()| None),
            Command::ServeTlsEcho(args) => tls::serve_echo(args).await.map(|()| None),
            Command::ServeWsEcho(args) => ws_serve::ws_echo(args).await.map(|()| None),
        }
    });
    match outcome {
        Ok(Some(report)) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coxswain-l4load: {e:#}");
            ExitCode::FAILURE
        }
    }
}
