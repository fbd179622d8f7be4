//! Sockets and what they do with a new connection: plain HTTP, or TLS where
//! the ClientHello's SNI picks the listener (then terminate and serve HTTP).
//! One accept loop per socket; stopping one drains only its connections.

mod accept;
pub mod client_hello;
mod rewind;
pub mod tls;

pub use accept::{ListenerTask, SharedPlan, spawn};

use coxswain_ir::Socket;

use tls::TlsSocket;

/// How a TCP socket treats new connections. Swapped atomically with its
/// routing table; a connection keeps the plan it was accepted with.
#[derive(Debug)]
pub enum SocketPlan {
    /// HTTP/1.1 or h2c (prior knowledge), by preface.
    Http,
    /// Read the ClientHello; the listener its SNI picks decides.
    Tls(TlsSocket),
}

impl SocketPlan {
    pub fn of(socket: &Socket) -> SocketPlan {
        if socket.reads_client_hello() {
            SocketPlan::Tls(TlsSocket::new(socket))
        } else {
            SocketPlan::Http
        }
    }
}
