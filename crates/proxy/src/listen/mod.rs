//! Sockets and what they do with a new connection: plain HTTP, or TLS where
//! the ClientHello's SNI picks the listener (then terminate and serve HTTP),
//! either after a PROXY protocol header when the socket expects one.
//! One accept loop per socket; stopping one drains only its connections.

mod accept;
mod certificates;
mod client_auth;
pub mod client_hello;
pub mod client_identity;
mod preface;
mod proxy_header;
mod proxy_metrics;
pub mod proxy_protocol;
pub(crate) mod rewind;
pub mod tls;
mod tls_info;

pub use accept::{ListenerTask, SharedPlan, spawn};
pub use certificates::Certificates;
pub use proxy_metrics::ProxyProtocolMetrics;
pub use tls_info::TlsInfo;

use std::sync::Arc;

use coxswain_ir::{ProxyProtocol, Serve, Socket};

use crate::l4::{BackendTlsUse, L4Context, L4Table};
use tls::TlsSocket;

/// How a TCP socket treats new connections. Swapped atomically with its
/// routing table; a connection keeps the plan it was accepted with.
#[derive(Debug)]
pub struct SocketPlan {
    /// Read a PROXY protocol header first: its source is the client.
    pub proxy_protocol: Option<ProxyProtocol>,
    pub mode: SocketMode,
}

/// What a connection carries (after any PROXY header).
#[derive(Debug)]
pub enum SocketMode {
    /// HTTP/1.1 or h2c (prior knowledge), by preface.
    Http,
    /// Read the ClientHello; the listener its SNI picks decides.
    Tls(TlsSocket),
    /// A plain TCP listener: every connection goes to its route's backend.
    Tcp(Arc<L4Table>),
}

impl SocketPlan {
    pub fn of(socket: &Socket, ctx: &L4Context<'_>) -> SocketPlan {
        SocketPlan {
            proxy_protocol: socket.proxy_protocol,
            mode: SocketMode::of(socket, ctx),
        }
    }

    /// Plain HTTP without PROXY protocol (a socket bound before its plan).
    pub fn http() -> SocketPlan {
        SocketPlan {
            proxy_protocol: None,
            mode: SocketMode::Http,
        }
    }
}

impl SocketMode {
    fn of(socket: &Socket, ctx: &L4Context<'_>) -> SocketMode {
        if socket.reads_client_hello() {
            return SocketMode::Tls(TlsSocket::new(socket, ctx));
        }
        // The translator never puts two TCP listeners, or TCP next to HTTP,
        // on one socket (they conflict).
        match socket.listeners.first().map(|l| (l, &l.serve)) {
            Some((listener, Serve::Tcp(routes))) => {
                let identity = ctx.identities.first().cloned().flatten();
                let tls = BackendTlsUse::Originate(identity);
                let table = L4Table::compile(listener, routes, ctx, tls);
                SocketMode::Tcp(Arc::new(table))
            }
            _ => SocketMode::Http,
        }
    }
}

/// The L4 table of a UDP socket's listener.
pub fn udp_table(socket: &Socket, ctx: &L4Context<'_>) -> L4Table {
    match socket.listeners.first().map(|l| (l, &l.serve)) {
        Some((listener, Serve::Udp(routes))) => {
            L4Table::compile(listener, routes, ctx, BackendTlsUse::AsIs)
        }
        _ => L4Table::default(),
    }
}
