//! A Gateway's IR cut into named, content-addressed resources, so an update
//! carries only what changed: one per socket (its settings and the order of
//! its listeners), one per listener (its settings and the order of its HTTP
//! routes), one per HTTP route (named by its rule, so a changed rule is the
//! only thing sent again), one per cluster and one per filter resource.
//! The version of a set is a digest of its names and digests, so every
//! controller replica names the same set alike. Encoding is in `encoder`,
//! turning a set back into the IR in `assemble`.

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_ir::{Config, Listener, Socket, Transport};
use sha2::{Digest as _, Sha256};

use crate::assemble::Assembled;
use crate::item::{Digest, Item};
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

/// A set's version as four lanes summed over its entries: adding or
/// removing one resource updates it in O(1), so neither side hashes the
/// whole set per update. The entries are SHA-256 of (name, digest) and the
/// peer is authenticated, so a colliding sum is not a practical concern.
pub(crate) type Lanes = [u64; 4];

pub(crate) fn entry(name: &str, digest: &Digest) -> Lanes {
    let mut hash = Sha256::new();
    hash.update(name.as_bytes());
    hash.update([0]);
    hash.update(digest.0);
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
    items: BTreeMap<Arc<str>, Item>,
    sum: Lanes,
    /// The config these resources make, once assembled (a proxy's).
    assembled: Option<Assembled>,
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
    replaced: Vec<(Arc<str>, Option<Item>)>,
    assembled: Option<Assembled>,
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

/// What every route resource of `listener` starts with: a route is
/// `route/<listener>/<rule>/<n>`, the n-th IR route of that rule in the
/// listener (one rule may give several).
pub(crate) fn route_prefix(listener: &str) -> String {
    format!("route/{}/", listener.trim_start_matches("listener/"))
}

impl Resources {
    /// `config` encoded from scratch (see [`crate::encoder::Encoder`] to
    /// reuse the previous encoding).
    pub fn from_config(config: &Config) -> Result<Resources, ResourceError> {
        crate::encoder::Encoder::default().encode(config)
    }

    pub fn items(&self) -> &BTreeMap<Arc<str>, Item> {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds or replaces `name`, returning what it replaced.
    pub fn insert(&mut self, name: Arc<str>, item: Item) -> Option<Item> {
        self.assembled = None;
        self.put(name, item)
    }

    /// Like [`Resources::insert`], with the entry's lanes already known.
    pub(crate) fn insert_entry(&mut self, name: Arc<str>, item: Item, lanes: Lanes) {
        self.assembled = None;
        add(&mut self.sum, lanes);
        if let Some(old) = self.items.insert(name.clone(), item) {
            subtract(&mut self.sum, entry(&name, &old.digest()));
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Item> {
        self.assembled = None;
        self.take(name)
    }

    fn put(&mut self, name: Arc<str>, item: Item) -> Option<Item> {
        let added = entry(&name, &item.digest());
        let removed = self.items.get(&name).map(|old| entry(&name, &old.digest()));
        add(&mut self.sum, added);
        if let Some(removed) = removed {
            subtract(&mut self.sum, removed);
        }
        self.items.insert(name, item)
    }

    fn take(&mut self, name: &str) -> Option<Item> {
        let removed = self.items.remove(name);
        if let Some(old) = &removed {
            subtract(&mut self.sum, entry(name, &old.digest()));
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
        Digest(hash.finalize().into()).to_string()
    }

    pub fn held(&self) -> Vec<Held> {
        self.items
            .iter()
            .map(|(name, item)| Held {
                name: name.to_string(),
                digest: item.digest().to_string(),
            })
            .collect()
    }

    /// The update that turns what a proxy holds (`held`: name → digest,
    /// hex) into this set; `None` when it holds exactly this.
    pub fn update_for(&self, held: &BTreeMap<String, String>) -> Option<ConfigUpdate> {
        let upserts: Vec<Resource> = self
            .items
            .iter()
            .filter(|(name, item)| {
                held.get(&***name).and_then(|d| Digest::parse(d)) != Some(item.digest())
            })
            .map(|(name, item)| resource(name, item))
            .collect();
        let removals: Vec<String> = held
            .keys()
            .filter(|name| !self.items.contains_key(name.as_str()))
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
                removals.push(gone.to_string());
            }
            match old.next_if(|(o, _)| *o == name) {
                Some((_, was)) if was.digest() == item.digest() => {}
                _ => upserts.push(resource(name, item)),
            }
        }
        removals.extend(old.map(|(gone, _)| gone.to_string()));
        self.update(upserts, removals)
    }

    /// An update that changes nothing: for a proxy that holds exactly
    /// this set but must still be told it is the one to serve.
    pub fn confirmation(&self) -> ConfigUpdate {
        ConfigUpdate {
            version: self.version(),
            ir_version: coxswain_ir::IR_VERSION,
            upserts: Vec::new(),
            removals: Vec::new(),
            more: false,
        }
    }

    fn update(&self, upserts: Vec<Resource>, removals: Vec<String>) -> Option<ConfigUpdate> {
        (!upserts.is_empty() || !removals.is_empty()).then(|| ConfigUpdate {
            version: self.version(),
            ir_version: coxswain_ir::IR_VERSION,
            upserts,
            removals,
            more: false,
        })
    }

    /// name → digest (hex).
    pub fn digests(&self) -> BTreeMap<String, String> {
        self.items
            .iter()
            .map(|(name, item)| (name.to_string(), item.digest().to_string()))
            .collect()
    }

    /// Applies `update` in place, checked: every body matches its digest,
    /// the result is the version the update names and it decodes. On an
    /// error the set is as it was; on success, [`Resources::revert`] with
    /// the returned [`Undo`] puts it back. Costs what the update carries
    /// (and, when it adds or removes resources, assembling the config
    /// again), not a copy of the set.
    pub fn apply(&mut self, update: &ConfigUpdate) -> Result<(Undo, Arc<Config>), ResourceError> {
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
                    r.name.as_str(),
                    Item::verified(&r.name, &r.digest, r.body.clone())?,
                ))
            })
            .collect::<Result<Vec<_>, ResourceError>>()?;
        let mut undo = Undo {
            replaced: Vec::new(),
            assembled: self.assembled.take(),
        };
        for name in &update.removals {
            let removed = self.take(name);
            undo.replaced.push((Arc::from(name.as_str()), removed));
        }
        for (name, item) in upserts {
            let name: Arc<str> = Arc::from(name);
            let replaced = self.put(name.clone(), item);
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
        let patched = undo.assembled.as_ref().and_then(|before| {
            (update.removals.is_empty())
                .then(|| before.patched(self, update.upserts.iter().map(|r| r.name.as_str())))
                .flatten()
        });
        let assembled = match patched {
            Some(assembled) => Ok(assembled),
            None => Assembled::of(self),
        };
        match assembled {
            Ok(assembled) => {
                let config = assembled.config().clone();
                self.assembled = Some(assembled);
                Ok((undo, config))
            }
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
        Ok((next, (*config).clone()))
    }

    /// Puts back what `undo` recorded.
    pub fn revert(&mut self, undo: Undo) {
        for (name, previous) in undo.replaced.into_iter().rev() {
            match previous {
                Some(item) => {
                    self.put(name, item);
                }
                None => {
                    self.take(&name);
                }
            }
        }
        self.assembled = undo.assembled;
    }

    /// The IR these resources describe.
    pub fn to_config(&self) -> Result<Config, ResourceError> {
        match &self.assembled {
            Some(assembled) => Ok((**assembled.config()).clone()),
            None => Ok((**Assembled::of(self)?.config()).clone()),
        }
    }
}

fn resource(name: &str, item: &Item) -> Resource {
    Resource {
        name: name.to_string(),
        digest: item.digest().to_string(),
        body: item.body().clone(),
    }
}

pub(crate) fn add(sum: &mut Lanes, entry: Lanes) {
    for (lane, e) in sum.iter_mut().zip(entry) {
        *lane = lane.wrapping_add(e);
    }
}

fn subtract(sum: &mut Lanes, entry: Lanes) {
    for (lane, e) in sum.iter_mut().zip(entry) {
        *lane = lane.wrapping_sub(e);
    }
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
