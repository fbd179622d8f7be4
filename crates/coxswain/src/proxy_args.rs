//! Data-plane flags shared by `run` and `controller`.

use std::time::Duration;

use clap::ValueEnum;
use coxswain_proxy::{EscapedSlashes, PathOptions, ProxyOptions, UdpOptions};

use crate::duration::parse_duration;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// How long in-flight requests may finish after SIGTERM (e.g. 30s, 500ms).
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,
    /// What a request path containing `%2F` or `%5C` gets: `keep` forwards
    /// it unchanged (the escape never splits a segment for matching),
    /// `reject` answers 400.
    #[arg(long, default_value = "keep", value_name = "ACTION")]
    pub path_escaped_slashes: EscapedSlashesArg,
    /// Collapse repeated slashes in request paths before matching and
    /// forwarding (`//a///b` becomes `/a/b`).
    #[arg(long)]
    pub merge_slashes: bool,
    /// A UDP session (one client address) with no datagram either way for
    /// this long is evicted; its next datagram picks a backend afresh.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_udp_session_timeout: Duration,
    /// At most this many UDP sessions per listener; beyond it the least
    /// recently active session is evicted.
    #[arg(long, default_value_t = 16_384, value_name = "N")]
    pub proxy_udp_max_sessions: usize,
    /// A TCP or TLS (TCPRoute/TLSRoute) connection with no bytes either way
    /// for this long is closed.
    #[arg(long, default_value = "1h", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_tcp_idle_timeout: Duration,
    /// Connect timeout for backend connections.
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_connect_timeout: Duration,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EscapedSlashesArg {
    Keep,
    Reject,
}

impl ProxyArgs {
    pub fn options(&self) -> ProxyOptions {
        ProxyOptions {
            drain_timeout: self.drain_timeout,
            path: PathOptions {
                escaped_slashes: match self.path_escaped_slashes {
                    EscapedSlashesArg::Keep => EscapedSlashes::Keep,
                    EscapedSlashesArg::Reject => EscapedSlashes::Reject,
                },
                merge_slashes: self.merge_slashes,
            },
            udp: UdpOptions {
                session_timeout: self.proxy_udp_session_timeout,
                max_sessions: self.proxy_udp_max_sessions.max(1),
            },
            tcp_idle_timeout: self.proxy_tcp_idle_timeout,
            connect_timeout: self.proxy_connect_timeout,
        }
    }
}
