//! Command line: one subcommand per load mode and per origin.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(name = "coxswain-l4load", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Connect, send a small request, read its echo, close; in a loop.
    TcpConn(ConnArgs),
    /// Long-lived connections streaming chunks and reading the echo back.
    TcpStream(StreamArgs),
    /// Like tcp-conn with a full TLS handshake first (no resumption).
    TlsConn(TlsConnArgs),
    /// One socket per worker, each sending a datagram and awaiting its echo.
    Udp(UdpArgs),
    /// WebSocket connections, each sending a masked binary message and
    /// reading its echo, one message in flight per connection.
    Ws(WsArgs),
    /// TCP origin: echoes every byte until the client half-closes.
    ServeTcpEcho(ServeArgs),
    /// UDP origin: sends every datagram back to its sender.
    ServeUdpEcho(ServeArgs),
    /// TLS origin: terminates TLS and echoes the plain text.
    ServeTlsEcho(ServeTlsArgs),
    /// WebSocket origin: answers the Upgrade with 101 and echoes every frame.
    ServeWsEcho(ServeArgs),
}

/// Shared by every load mode.
#[derive(Args, Clone)]
pub struct LoadArgs {
    /// Address to load (the proxy's listener, or an origin directly).
    #[arg(long)]
    pub target: SocketAddr,
    /// Seconds of load.
    #[arg(long, default_value_t = 6.0)]
    pub duration: f64,
    /// Concurrent workers (connections or sockets).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,
    /// Per-operation timeout in milliseconds; an operation that takes longer
    /// counts as an error (as a loss for udp).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
}

#[derive(Args)]
pub struct ConnArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Request bytes per connection; the echo must return them all.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub size: u32,
}

#[derive(Args)]
pub struct StreamArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Bytes per write.
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub chunk: u32,
}

#[derive(Args)]
pub struct TlsConnArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Server name sent in the ClientHello and verified in the certificate.
    #[arg(long)]
    pub sni: String,
    /// PEM file with the CA certificate(s) to trust.
    #[arg(long)]
    pub cafile: PathBuf,
}

#[derive(Args)]
pub struct UdpArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Datagram size (the first 8 bytes carry a sequence number).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(8..=65_507))]
    pub size: u32,
}

#[derive(Args)]
pub struct WsArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// Request target of the Upgrade request.
    #[arg(long, default_value = "/ws")]
    pub path: String,
    /// Host header of the Upgrade request.
    #[arg(long, default_value = "ws.test")]
    pub host: String,
    /// Payload bytes per message (one binary frame each way).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
    pub message_bytes: u32,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long)]
    pub listen: SocketAddr,
}

#[derive(Args)]
pub struct ServeTlsArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// PEM certificate chain, leaf first.
    #[arg(long)]
    pub cert: PathBuf,
    /// PEM private key.
    #[arg(long)]
    pub key: PathBuf,
}
