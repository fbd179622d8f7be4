//! A Gateway's config encoded as resources, patching the previous encoding
//! instead of redoing it: an HTTP route or a cluster the translator kept
//! (the same `Arc`) keeps its JSON, digest, name and version entry, and a
//! listener whose routes and settings are as before keeps its head. A
//! route change then costs that route's encoding plus a copy of the set's
//! index, not every route's JSON.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use bytes::Bytes;
use coxswain_ir::{Cluster, Config, Listener, Route, Serve};
use serde::Serialize;

use crate::item::{Item, ListenerHead, SocketHead};
use crate::resources::{
    Lanes, ResourceError, Resources, entry, listener_name, route_prefix, socket_name,
};

/// The encodings of the last [`Encoder::encode`], kept for the next.
#[derive(Default)]
pub struct Encoder {
    routes: ByAddress<KeptRoute>,
    clusters: ByAddress<KeptCluster>,
    heads: HashMap<Arc<str>, KeptHead>,
    /// Names of the sockets and extensions of the last run.
    others: Vec<Arc<str>>,
    /// What the last run returned.
    set: Resources,
}

/// Keyed by an `Arc`'s address; the entry holds the `Arc`, so the address
/// stays its own.
type ByAddress<V> = HashMap<usize, V, BuildHasherDefault<AddressHasher>>;

/// Addresses are already unique: spread them, skip SipHash.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = n as u64;
    }
}

struct KeptRoute {
    /// Held so its address (the key) stays this route's.
    _route: Arc<Route>,
    /// `<Kind>/<namespace>/<name>/<rule index>`, from the route's id.
    rule: Arc<str>,
    item: Item,
    /// Each place it is served (one per occurrence, in order): listener,
    /// ordinal, resource name.
    names: Vec<Named>,
    /// `names` of the last run, while this one runs.
    previous: Vec<Named>,
}

type Named = (Arc<str>, usize, Arc<str>);

struct KeptCluster {
    /// Held so its address (the key) stays this cluster's.
    _cluster: Arc<Cluster>,
    name: Arc<str>,
}

/// A listener's head and what it was made of: the listener without its
/// routes, and its routes' resource names in order.
struct KeptHead {
    listener: Listener,
    order: Vec<Arc<str>>,
}

/// One run's changes to the set.
#[derive(Default)]
struct Changes {
    /// Names that may be gone (removed first; anything still produced is
    /// among `put`).
    gone: Vec<Arc<str>>,
    put: Vec<(Arc<str>, Item, Lanes)>,
}

impl Changes {
    fn put(&mut self, name: Arc<str>, item: Item) {
        let lanes = entry(&name, &item.digest());
        self.put.push((name, item, lanes));
    }
}

impl Encoder {
    pub fn encode(&mut self, config: &Config) -> Result<Resources, ResourceError> {
        // Whole: a pool's proxy needs its keys and hashes (mTLS in transit).
        let changes = coxswain_ir::reveal::revealing(|| self.changes(config));
        match changes {
            Ok(changes) => {
                for name in &changes.gone {
                    self.set.remove(name);
                }
                for (name, item, lanes) in changes.put {
                    self.set.insert_entry(name, item, lanes);
                }
                Ok(self.set.clone())
            }
            Err(e) => {
                // Start afresh next time rather than trust a half run.
                *self = Encoder::default();
                Err(e)
            }
        }
    }

    fn changes(&mut self, config: &Config) -> Result<Changes, ResourceError> {
        let mut changes = Changes::default();
        let mut routes = ByAddress::default();
        let mut heads = HashMap::new();
        let mut others = Vec::new();
        for socket in &config.sockets {
            let name = socket_name(socket);
            let mut listeners = Vec::new();
            for listener in &socket.listeners {
                let listener_name: Arc<str> = Arc::from(listener_name(&name, listener));
                let head = self.listener(listener, &listener_name, &mut routes, &mut changes)?;
                heads.insert(listener_name.clone(), head);
                listeners.push(listener_name.to_string());
            }
            let head = SocketHead {
                transport: socket.transport,
                address: socket.address,
                port: socket.port,
                proxy_protocol: socket.proxy_protocol,
                listeners,
            };
            others.push(self.other(name, &head, &mut changes)?);
        }
        let mut clusters = ByAddress::default();
        for cluster in &config.clusters {
            let key = Arc::as_ptr(cluster) as usize;
            let kept = match self.clusters.remove(&key).or_else(|| clusters.remove(&key)) {
                Some(kept) => kept,
                None => {
                    let name: Arc<str> = Arc::from(format!("cluster/{}", cluster.name));
                    changes.put(name.clone(), encode(&name, &**cluster)?);
                    KeptCluster {
                        _cluster: cluster.clone(),
                        name,
                    }
                }
            };
            clusters.insert(key, kept);
        }
        for extension in &config.extensions {
            let name = format!("extension/{}", extension.key);
            others.push(self.other(name, extension, &mut changes)?);
        }
        // What the last run had and this one did not produce again.
        changes.gone.extend(
            self.routes
                .drain()
                .flat_map(|(_, r)| r.names)
                .map(|(_, _, n)| n),
        );
        for route in routes.values_mut() {
            for (_, _, old) in route.previous.drain(..) {
                if !route.names.iter().any(|(_, _, name)| *name == old) {
                    changes.gone.push(old);
                }
            }
        }
        changes
            .gone
            .extend(self.clusters.drain().map(|(_, c)| c.name));
        changes.gone.extend(
            self.heads
                .drain()
                .map(|(name, _)| name)
                .filter(|n| !heads.contains_key(n)),
        );
        let current: HashSet<&Arc<str>> = others.iter().collect();
        changes
            .gone
            .extend(self.others.iter().filter(|n| !current.contains(n)).cloned());
        self.routes = routes;
        self.clusters = clusters;
        self.heads = heads;
        self.others = others;
        Ok(changes)
    }

    /// A socket's or an extension's resource, put when its body changed.
    fn other(
        &self,
        name: String,
        value: &impl Serialize,
        changes: &mut Changes,
    ) -> Result<Arc<str>, ResourceError> {
        let item = encode(&name, value)?;
        let name: Arc<str> = Arc::from(name);
        if self.set.items().get(&name) != Some(&item) {
            changes.put(name.clone(), item);
        }
        Ok(name)
    }

    /// The listener's HTTP routes (each a resource, named by its rule and
    /// ordinal) and its head, which names them in order; other kinds keep
    /// their few routes inline.
    fn listener(
        &mut self,
        listener: &Listener,
        listener_name: &Arc<str>,
        kept: &mut ByAddress<KeptRoute>,
        changes: &mut Changes,
    ) -> Result<KeptHead, ResourceError> {
        let (bare, order) = match &listener.serve {
            Serve::Http(routes) => {
                let bare = Listener {
                    serve: Serve::Http(Vec::new()),
                    ..listener.clone()
                };
                (bare, self.routes_of(routes, listener_name, kept, changes)?)
            }
            _ => (listener.clone(), Vec::new()),
        };
        let unchanged = self
            .heads
            .get(listener_name)
            .is_some_and(|head| head.order == order && head.listener == bare);
        if !unchanged {
            let prefix = route_prefix(listener_name);
            let routes = order
                .iter()
                .map(|name| {
                    name.strip_prefix(prefix.as_str())
                        .unwrap_or(name)
                        .to_string()
                })
                .collect();
            let head = ListenerHead {
                listener: bare.clone(),
                routes,
            };
            changes.put(listener_name.clone(), encode(listener_name, &head)?);
        }
        Ok(KeptHead {
            listener: bare,
            order,
        })
    }

    /// Puts each new or renamed route; returns their names in order.
    fn routes_of(
        &mut self,
        routes: &[Arc<Route>],
        listener_name: &Arc<str>,
        kept: &mut ByAddress<KeptRoute>,
        changes: &mut Changes,
    ) -> Result<Vec<Arc<str>>, ResourceError> {
        let prefix = route_prefix(listener_name);
        let mut seen: HashMap<Arc<str>, usize> = HashMap::new();
        let mut order = Vec::with_capacity(routes.len());
        for route in routes {
            let key = Arc::as_ptr(route) as usize;
            // The same route object served twice has a name per place.
            let twice = kept.contains_key(&key);
            let mut this = match self.routes.remove(&key).or_else(|| kept.remove(&key)) {
                Some(this) => this,
                None => {
                    let id = &route.id;
                    let rule = format!(
                        "{:?}/{}/{}/{}",
                        id.kind, id.namespace, id.name, id.rule_index
                    );
                    let item = encode(&format!("{prefix}{rule}"), &**route)?;
                    KeptRoute {
                        _route: route.clone(),
                        rule: Arc::from(rule),
                        item,
                        names: Vec::new(),
                        previous: Vec::new(),
                    }
                }
            };
            if !twice {
                this.previous = std::mem::take(&mut this.names);
            }
            let n = seen.entry(this.rule.clone()).or_default();
            *n += 1;
            let ordinal = *n;
            let kept_name = this
                .previous
                .get(this.names.len())
                .filter(|(l, o, _)| l == listener_name && *o == ordinal);
            let name = match kept_name {
                Some((_, _, name)) => name.clone(),
                None => {
                    let name: Arc<str> = Arc::from(format!("{prefix}{}/{ordinal}", this.rule));
                    changes.put(name.clone(), this.item.clone());
                    name
                }
            };
            this.names
                .push((listener_name.clone(), ordinal, name.clone()));
            order.push(name);
            kept.insert(key, this);
        }
        Ok(order)
    }
}

fn encode(name: &str, value: &impl Serialize) -> Result<Item, ResourceError> {
    let body = serde_json::to_vec(value).map_err(|e| ResourceError::Encode {
        name: name.to_string(),
        error: e.to_string(),
    })?;
    Ok(Item::new(Bytes::from(body)))
}
