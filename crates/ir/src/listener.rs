use std::net::IpAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Hostname, Route, TlsCertificate};

/// One bound socket. Several Gateway listeners may share it (same address and
/// port, distinct hostnames); a request is served only by the routes of the
/// most specific Gateway listener whose hostname matches its Host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Listener {
    pub address: IpAddr,
    pub port: u16,
    pub protocol: ListenerProtocol,
    /// Sorted by hostname specificity: exact first, then wildcards from the
    /// longest suffix, then the listener without a hostname.
    pub gateway_listeners: Vec<GatewayListener>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListenerProtocol {
    Http,
    /// TLS terminated here; each Gateway listener carries its certificates.
    Https,
}

/// A Gateway listener (or its share of a socket) and the routes attached to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatewayListener {
    /// `namespace/name` of the Gateway.
    pub gateway: String,
    /// The listener's `name` (its sectionName).
    pub name: String,
    /// `None` matches every Host.
    pub hostname: Option<Hostname>,
    /// Shared so an unchanged route keeps its identity across configs: the
    /// translator reuses it and the proxy skips recompiling it. Serialises
    /// as a plain object.
    pub routes: Vec<Arc<Route>>,
    /// Certificates for HTTPS sockets (empty for HTTP), presented when the
    /// client's SNI matches `hostname` by the same rules as Host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<TlsCertificate>,
}
