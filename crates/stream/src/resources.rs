//! A Gateway's IR cut into named, content-addressed resources, so an update
//! carries only what changed: one per socket (its settings and the order of
//! its listeners), one per listener (its settings and the order of its HTTP
//! routes), one per HTTP route (named by its rule, so a changed rule is the
//! only thing sent again), one per cluster and one per filter resource.
//! The version of a set is a digest of its names and digests, so every
//! controller replica names the same set alike. Encoding is in `encoder`,
//! turning a set back into the IR in `assemble`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use coxswain_ir::{Cluster, Config, Extension, Listener, ProxyProtocol, Route, Socket, Transport};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::wire::{ConfigUpdate, Held, Resource};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResourceError {
    #[error("cannot encode {name}: {error}")]
    Encode { name: String, error: String },
    #[error("resource {name} does not parse: {error}")]
    Decode { name: String, error: String },
    #[error("resource {name} does not match its digest")]
    Digest { name: String },
    #[error("socket {socket} names listener {listener}, which was not sent")]
    MissingListener { socket: String, listener: String },
    #[error("listener {listener} names route {route}, which was not sent")]
    MissingRoute { listener: String, route: String },
    #[error("unknown resource {0}")]
    Unknown(String),
    #[error("IR version {got} is not {want}, the one this proxy serves")]
    IrVersion { got: u32, want: u32 },
    #[error("after the update the resources are version {got}, not {want}")]
    Version { got: String, want: String },
}

/// One resource's digest and JSON body (and, once a proxy needed it, the
/// body decoded, so an unchanged resource is not parsed again).
#[derive(Clone, Debug)]
pub struct Item {
    digest: String,
    body: Bytes,
    decoded: OnceLock<Decoded>,
}

impl Item {
    pub fn new(body: Bytes) -> Item {
        Item {
            digest: digest(&body),
            body,
            decoded: OnceLock::new(),
        }
    }

    /// SHA-256 of the body, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// JSON.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// `body` if it matches `digest`.
    pub fn verified(name: &str, digest_hex: &str, body: Bytes) -> Result<Item, ResourceError> {
        let item = Item::new(body);
        if item.digest != digest_hex {
            return Err(ResourceError::Digest {
                name: name.to_string(),
            });
        }
        Ok(item)
    }

    /// The body decoded as the resource `name` names (cached).
    pub(crate) fn decoded(&self, name: &str) -> Result<&Decoded, ResourceError> {
        if let Some(decoded) = self.decoded.get() {
            return Ok(decoded);
        }
        let decoded = Decoded::parse(name, &self.body)?;
        Ok(self.decoded.get_or_init(|| decoded))
    }
}

/// The digest names the body.
impl PartialEq for Item {
    fn eq(&self, other: &Item) -> bool {
        self.digest == other.digest
    }
}

impl Eq for Item {}

/// A resource's body decoded.
#[derive(Clone, Debug)]
pub(crate) enum Decoded {
    Socket(Arc<SocketHead>),
    Listener(Arc<ListenerHead>),
    Route(Arc<Route>),
    Cluster(Arc<Cluster>),
    Extension(Arc<Extension>),
}

impl Decoded {
    fn parse(name: &str, body: &[u8]) -> Result<Decoded, ResourceError> {
        Ok(match name.split('/').next().unwrap_or_default() {
            "socket" => Decoded::Socket(Arc::new(decode(name, body)?)),
            "listener" => Decoded::Listener(Arc::new(decode(name, body)?)),
            "route" => Decoded::Route(Arc::new(decode(name, body)?)),
            "cluster" => Decoded::Cluster(Arc::new(decode(name, body)?)),
            "extension" => Decoded::Extension(Arc::new(decode(name, body)?)),
            _ => return Err(ResourceError::Unknown(name.to_string())),
        })
    }
}

/// A set's version as four lanes summed over its entries: adding or
/// removing one resource updates it in O(1), so neither side hashes the
/// whole set per update. The entries are SHA-256 of (name, digest) and the
/// peer is authenticated, so a colliding sum is not a practical concern.
type Lanes = [u64; 4];

fn entry(name: &str, digest: &str) -> Lanes {
    let mut hash = Sha256::new();
    hash.update(name.as_bytes());
    hash.update([0]);
    hash.update(digest.as_bytes());
    let bytes = hash.finalize();
    let mut lanes = [0u64; 4];
    for (lane, chunk) in lanes.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *lane = u64::from_le_bytes(word);
    }
    lanes
}

/// A whole set of resources (what a proxy holds, or should).
#[derive(Clone, Debug, Default)]
pub struct Resources {
    items: BTreeMap<String, Item>,
    sum: Lanes,
}

/// Equal sets have equal sums and sizes (see [`Lanes`]): O(1).
impl PartialEq for Resources {
    fn eq(&self, other: &Resources) -> bool {
        self.sum == other.sum && self.items.len() == other.items.len()
    }
}

impl Eq for Resources {}

/// What [`Resources::apply`] replaced, to put back when the proxy does not
/// serve the update after all.
#[derive(Debug, Default)]
#[must_use]
pub struct Undo {
    replaced: Vec<(String, Option<Item>)>,
}

/// A socket resource: the socket without its listeners, which are named.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SocketHead {
    pub(crate) transport: Transport,
    pub(crate) address: std::net::IpAddr,
    pub(crate) port: u16,
    pub(crate) proxy_protocol: Option<ProxyProtocol>,
    pub(crate) listeners: Vec<String>,
}

/// A listener resource: the listener without its HTTP routes, which are
/// named (in the order they are matched).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ListenerHead {
    pub(crate) listener: Listener,
    pub(crate) routes: Vec<String>,
}

pub fn digest(body: &[u8]) -> String {
    hex(&Sha256::digest(body))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn socket_name(socket: &Socket) -> String {
    let transport = match socket.transport {
        Transport::Tcp => "tcp",
        Transport::Udp => "udp",
    };
    format!("socket/{transport}/{}", socket.addr())
}

pub(crate) fn listener_name(socket: &str, listener: &Listener) -> String {
    let owner = listener.listener_set.as_deref().unwrap_or("-");
    let socket = socket.trim_start_matches("socket/");
    format!("listener/{socket}/{owner}/{}", listener.name)
}

/// A listener's route resource: `route/<listener>/<rule>/<n>`, the n-th
/// IR route of that rule in the listener (one rule may give several).
pub(crate) fn route_name(listener: &str, route: &str) -> String {
    format!("{}{route}", route_prefix(listener))
}

/// What every route resource of `listener` starts with.
pub(crate) fn route_prefix(listener: &str) -> String {
    format!("route/{}/", listener.trim_start_matches("listener/"))
}

impl Resources {
    /// `config` encoded from scratch (see [`crate::encoder::Encoder`] to
    /// reuse the previous encoding).
    pub fn from_config(config: &Config) -> Result<Resources, ResourceError> {
        crate::encoder::Encoder::default().encode(config)
    }

    pub fn items(&self) -> &BTreeMap<String, Item> {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds or replaces `name`, returning what it replaced.
    pub fn insert(&mut self, name: String, item: Item) -> Option<Item> {
        add(&mut self.sum, entry(&name, &item.digest));
        let replaced = self.items.insert(name.clone(), item);
        if let Some(old) = &replaced {
            subtract(&mut self.sum, entry(&name, &old.digest));
        }
        replaced
    }

    pub fn remove(&mut self, name: &str) -> Option<Item> {
        let removed = self.items.remove(name);
        if let Some(old) = &removed {
            subtract(&mut self.sum, entry(name, &old.digest));
        }
        removed
    }

    /// The set's name: a digest of the IR version and the sum of every
    /// (name, digest) entry.
    pub fn version(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(coxswain_ir::IR_VERSION.to_be_bytes());
        for lane in self.sum {
            hash.update(lane.to_le_bytes());
        }
        hex(&hash.finalize())
    }

    pub fn held(&self) -> Vec<Held> {
        self.items
            .iter()
            .map(|(name, item)| Held {
                name: name.clone(),
                digest: item.digest.clone(),
            })
            .collect()
    }

    /// The update that turns what a proxy holds (`held`: name → digest)
    /// into this set; `None` when it holds exactly this.
    pub fn update_for(&self, held: &BTreeMap<String, String>) -> Option<ConfigUpdate> {
        let upserts: Vec<Resource> = self
            .items
            .iter()
            .filter(|(name, item)| held.get(*name) != Some(&item.digest))
            .map(|(name, item)| resource(name, item))
            .collect();
        let removals: Vec<String> = held
            .keys()
            .filter(|name| !self.items.contains_key(*name))
            .cloned()
            .collect();
        self.update(upserts, removals)
    }

    /// The update that turns `from` into this set (one walk over both).
    pub fn update_from(&self, from: &Resources) -> Option<ConfigUpdate> {
        let mut upserts = Vec::new();
        let mut removals = Vec::new();
        let mut old = from.items.iter().peekable();
        for (name, item) in &self.items {
            while let Some((gone, _)) = old.next_if(|(o, _)| *o < name) {
                removals.push(gone.clone());
            }
            match old.next_if(|(o, _)| *o == name) {
                Some((_, was)) if was.digest == item.digest => {}
                _ => upserts.push(resource(name, item)),
            }
        }
        removals.extend(old.map(|(gone, _)| gone.clone()));
        self.update(upserts, removals)
    }

    fn update(&self, upserts: Vec<Resource>, removals: Vec<String>) -> Option<ConfigUpdate> {
        (!upserts.is_empty() || !removals.is_empty()).then(|| ConfigUpdate {
            version: self.version(),
            ir_version: coxswain_ir::IR_VERSION,
            upserts,
            removals,
        })
    }

    /// name → digest.
    pub fn digests(&self) -> BTreeMap<String, String> {
        self.items
            .iter()
            .map(|(name, item)| (name.clone(), item.digest.clone()))
            .collect()
    }

    /// Applies `update` in place, checked: every body matches its digest,
    /// the result is the version the update names and it decodes. On an
    /// error the set is as it was; on success, [`Resources::revert`] with
    /// the returned [`Undo`] puts it back. Costs what the update carries
    /// plus assembling the config, not a copy of the set.
    pub fn apply(&mut self, update: &ConfigUpdate) -> Result<(Undo, Config), ResourceError> {
        if update.ir_version != coxswain_ir::IR_VERSION {
            return Err(ResourceError::IrVersion {
                got: update.ir_version,
                want: coxswain_ir::IR_VERSION,
            });
        }
        let upserts = update
            .upserts
            .iter()
            .map(|r| {
                Ok((
                    r.name.clone(),
                    Item::verified(&r.name, &r.digest, r.body.clone())?,
                ))
            })
            .collect::<Result<Vec<_>, ResourceError>>()?;
        let mut undo = Undo::default();
        for name in &update.removals {
            let removed = self.remove(name);
            undo.replaced.push((name.clone(), removed));
        }
        for (name, item) in upserts {
            let replaced = self.insert(name.clone(), item);
            undo.replaced.push((name, replaced));
        }
        let version = self.version();
        if version != update.version {
            self.revert(undo);
            return Err(ResourceError::Version {
                got: version,
                want: update.version.clone(),
            });
        }
        match self.to_config() {
            Ok(config) => Ok((undo, config)),
            Err(e) => {
                self.revert(undo);
                Err(e)
            }
        }
    }

    /// This set with `update` applied (a copy; see [`Resources::apply`]).
    pub fn applied(&self, update: &ConfigUpdate) -> Result<(Resources, Config), ResourceError> {
        let mut next = self.clone();
        let (_, config) = next.apply(update)?;
        Ok((next, config))
    }

    /// Puts back what `undo` recorded.
    pub fn revert(&mut self, undo: Undo) {
        for (name, previous) in undo.replaced.into_iter().rev() {
            match previous {
                Some(item) => {
                    self.insert(name, item);
                }
                None => {
                    self.remove(&name);
                }
            }
        }
    }

    /// The IR these resources describe.
    pub fn to_config(&self) -> Result<Config, ResourceError> {
        crate::assemble::assemble(self)
    }
}

fn resource(name: &str, item: &Item) -> Resource {
    Resource {
        name: name.to_string(),
        digest: item.digest.clone(),
        body: item.body.clone(),
    }
}

fn add(sum: &mut Lanes, entry: Lanes) {
    for (lane, e) in sum.iter_mut().zip(entry) {
        *lane = lane.wrapping_add(e);
    }
}

fn subtract(sum: &mut Lanes, entry: Lanes) {
    for (lane, e) in sum.iter_mut().zip(entry) {
        *lane = lane.wrapping_sub(e);
    }
}

fn decode<T: serde::de::DeserializeOwned>(name: &str, body: &[u8]) -> Result<T, ResourceError> {
    serde_json::from_slice(body).map_err(|e| ResourceError::Decode {
        name: name.to_string(),
        error: e.to_string(),
    })
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
