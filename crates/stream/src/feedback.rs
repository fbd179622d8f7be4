//! What the proxies told the controller about each Gateway's config.

use std::collections::BTreeMap;

use coxswain_ir::UnboundSocket;

/// One dedicated Gateway's pool, as seen over the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolReport {
    /// Subscriptions open now.
    pub connected: usize,
    /// The last version a proxy acknowledged (serves).
    pub acked: Option<String>,
    /// Sockets of the acknowledged version a proxy could not bind.
    pub unbound: Vec<UnboundSocket>,
    /// The last version a proxy rejected, and why.
    pub rejected: Option<(String, String)>,
    /// Updates sent to this pool's proxies, and their encoded bytes.
    pub updates_sent: u64,
    pub bytes_sent: u64,
}

/// `namespace/name` of a Gateway → its pool's report.
pub type Reports = BTreeMap<String, PoolReport>;
