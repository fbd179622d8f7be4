use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{AccessLogPolicy, Hostname, L4Route, Route, TlsCertificate};

/// The transport a socket is bound with. TCP and UDP sockets on the same
/// port number are two sockets, never a conflict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Transport {
    Tcp,
    Udp,
}

/// One bound socket and the listeners sharing it. On a TCP socket that
/// terminates or passes through TLS, the ClientHello's SNI picks the
/// listener; on plain HTTP the request's Host does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Socket {
    pub transport: Transport,
    pub address: IpAddr,
    pub port: u16,
    /// Sorted by hostname specificity: exact first, then wildcards from the
    /// longest suffix, then the listener without a hostname.
    pub listeners: Vec<Listener>,
    /// Connections start with a PROXY protocol (v1 or v2) header naming
    /// the real client (a ClientTrafficPolicy covering every listener here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ProxyProtocol>,
}

/// PROXY protocol on a TCP socket: v1 and v2 are both accepted, told apart
/// by their signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyProtocol {
    /// A connection without a header is served with the socket peer as its
    /// client instead of being closed.
    pub optional: bool,
}

impl Socket {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.port)
    }

    /// Does any listener here need the ClientHello (TLS of either kind)?
    pub fn reads_client_hello(&self) -> bool {
        self.listeners
            .iter()
            .any(|l| l.tls.is_some() || matches!(l.serve, Serve::TlsPassthrough(_)))
    }
}

/// A Gateway listener (or its share of a socket) and what it serves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listener {
    /// `namespace/name` of the Gateway.
    pub gateway: String,
    /// The listener's `name` (its sectionName).
    pub name: String,
    /// `None` matches every Host (and every SNI).
    pub hostname: Option<Hostname>,
    /// TLS terminated here (HTTPS, or TLS with `mode: Terminate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsTermination>,
    pub serve: Serve,
    /// `namespace/name` of the ListenerSet that declared it; `None` for
    /// the Gateway's own listeners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_set: Option<String>,
    /// Presented to backends reached over TLS (the Gateway's
    /// `spec.tls.backend.clientCertificateRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_client_certificate: Option<TlsCertificate>,
    /// This listener's access-log settings (a ClientTrafficPolicy's
    /// `accessLog`); `None` keeps the process-wide ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log: Option<AccessLogPolicy>,
}

impl Listener {
    /// The HTTP routes, if this listener serves HTTP.
    pub fn http_routes(&self) -> Option<&[Arc<Route>]> {
        match &self.serve {
            Serve::Http(routes) => Some(routes),
            _ => None,
        }
    }
}

/// What a listener does with a connection (after TLS, when terminated).
/// Routes are shared so an unchanged route keeps its identity across
/// configs: the translator reuses it and the proxy skips recompiling it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Serve {
    /// HTTP/1.1 and HTTP/2 requests routed by [`Route`]s.
    Http(Vec<Arc<Route>>),
    /// The still-encrypted connection, spliced to a backend chosen by SNI.
    TlsPassthrough(Vec<Arc<L4Route>>),
    /// A byte stream (decrypted first when `tls` is set) to one backend.
    Tcp(Vec<Arc<L4Route>>),
    /// Datagrams, relayed per client session.
    Udp(Vec<Arc<L4Route>>),
}

/// TLS ended at the gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TlsTermination {
    /// Presented when the client's SNI matches the listener's hostname.
    pub certificates: Vec<TlsCertificate>,
    /// Client certificates are asked for and verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<ClientValidation>,
}

/// Frontend (client) certificate validation of a TLS listener.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientValidation {
    /// Trust anchors; never empty.
    pub ca_bundles: Vec<CaBundle>,
    pub mode: ClientValidationMode,
}

impl ClientValidation {
    /// The same CAs with certificates required: what a valid client
    /// certificate means whatever the mode.
    pub fn strict(&self) -> ClientValidation {
        ClientValidation {
            ca_bundles: self.ca_bundles.clone(),
            mode: ClientValidationMode::AllowValidOnly,
        }
    }
}

/// PEM CA certificates from one object. Shared, so a bundle many listeners
/// use is held once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaBundle {
    /// `Kind namespace/name` it came from (for logs and `/config`).
    pub source: String,
    pub pem: Arc<str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClientValidationMode {
    /// A valid client certificate is required to complete the handshake.
    AllowValidOnly,
    /// A certificate is asked for, but a missing or invalid one is let in
    /// (the spec's AllowInsecureFallback).
    AllowInsecureFallback,
}
