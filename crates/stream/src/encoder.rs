//! A Gateway's config encoded as resources, reusing the previous encoding
//! of whatever did not change: an HTTP route or a cluster the translator
//! kept (the same `Arc`) keeps its JSON, digest, name and version entry.
//! A route change then costs that route's encoding, not every route's.

use std::collections::HashMap;
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
    /// By the route's address; the `Arc` is held so the address stays its.
    routes: HashMap<usize, KeptRoute>,
    /// Likewise by the cluster's address.
    clusters: HashMap<usize, KeptCluster>,
}

struct KeptRoute {
    /// Held so its address (the key) stays this route's.
    _route: Arc<Route>,
    /// `<Kind>/<namespace>/<name>/<rule index>`, from the route's id.
    rule: Arc<str>,
    item: Item,
    /// The listener and ordinal it was named for, its name and entry.
    named: Option<(String, usize, Arc<str>, Lanes)>,
}

struct KeptCluster {
    /// Held so its address (the key) stays this cluster's.
    _cluster: Arc<Cluster>,
    name: Arc<str>,
    item: Item,
    lanes: Lanes,
}

type Entries = Vec<(Arc<str>, Item, Lanes)>;

impl Encoder {
    pub fn encode(&mut self, config: &Config) -> Result<Resources, ResourceError> {
        // Whole: a pool's proxy needs its keys and hashes (mTLS in transit).
        coxswain_ir::reveal::revealing(|| self.encode_revealed(config))
    }

    fn encode_revealed(&mut self, config: &Config) -> Result<Resources, ResourceError> {
        let mut entries: Entries = Vec::new();
        let mut routes = HashMap::new();
        for socket in &config.sockets {
            let name = socket_name(socket);
            let mut listeners = Vec::new();
            for listener in &socket.listeners {
                let listener_name = listener_name(&name, listener);
                let head =
                    self.encode_routes(listener, &listener_name, &mut routes, &mut entries)?;
                push(&mut entries, listener_name.clone(), &head)?;
                listeners.push(listener_name);
            }
            let head = SocketHead {
                transport: socket.transport,
                address: socket.address,
                port: socket.port,
                proxy_protocol: socket.proxy_protocol,
                listeners,
            };
            push(&mut entries, name, &head)?;
        }
        let mut clusters = HashMap::with_capacity(config.clusters.len());
        for cluster in &config.clusters {
            let key = Arc::as_ptr(cluster) as usize;
            let kept = match self.clusters.remove(&key).or_else(|| clusters.remove(&key)) {
                Some(kept) => kept,
                None => {
                    let name: Arc<str> = Arc::from(format!("cluster/{}", cluster.name));
                    let item = encode(&name, &**cluster)?;
                    let lanes = entry(&name, &item.digest());
                    KeptCluster {
                        _cluster: cluster.clone(),
                        name,
                        item,
                        lanes,
                    }
                }
            };
            entries.push((kept.name.clone(), kept.item.clone(), kept.lanes));
            clusters.insert(key, kept);
        }
        for extension in &config.extensions {
            push(
                &mut entries,
                format!("extension/{}", extension.key),
                extension,
            )?;
        }
        self.routes = routes;
        self.clusters = clusters;
        Ok(Resources::from_entries(entries))
    }

    /// Adds the listener's HTTP routes (each a resource, named by its rule
    /// and ordinal) to `entries` and returns the listener's head, which
    /// names them in order. Other kinds keep their few routes inline.
    fn encode_routes(
        &mut self,
        listener: &Listener,
        listener_name: &str,
        kept: &mut HashMap<usize, KeptRoute>,
        entries: &mut Entries,
    ) -> Result<ListenerHead, ResourceError> {
        let Serve::Http(routes) = &listener.serve else {
            return Ok(ListenerHead {
                listener: listener.clone(),
                routes: Vec::new(),
            });
        };
        let prefix = route_prefix(listener_name);
        let mut seen: HashMap<Arc<str>, usize> = HashMap::new();
        let mut names = Vec::with_capacity(routes.len());
        for route in routes {
            let key = Arc::as_ptr(route) as usize;
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
                        named: None,
                    }
                }
            };
            let n = seen.entry(this.rule.clone()).or_default();
            *n += 1;
            let ordinal = *n;
            let (name, lanes) = match &this.named {
                Some((l, o, name, lanes)) if l == listener_name && *o == ordinal => {
                    (name.clone(), *lanes)
                }
                _ => {
                    let name: Arc<str> = Arc::from(format!("{prefix}{}/{ordinal}", this.rule));
                    let lanes = entry(&name, &this.item.digest());
                    this.named = Some((listener_name.to_string(), ordinal, name.clone(), lanes));
                    (name, lanes)
                }
            };
            names.push(format!("{}/{ordinal}", this.rule));
            entries.push((name, this.item.clone(), lanes));
            kept.insert(key, this);
        }
        Ok(ListenerHead {
            listener: Listener {
                serve: Serve::Http(Vec::new()),
                ..listener.clone()
            },
            routes: names,
        })
    }
}

fn encode(name: &str, value: &impl Serialize) -> Result<Item, ResourceError> {
    let body = serde_json::to_vec(value).map_err(|e| ResourceError::Encode {
        name: name.to_string(),
        error: e.to_string(),
    })?;
    Ok(Item::new(Bytes::from(body)))
}

fn push(entries: &mut Entries, name: String, value: &impl Serialize) -> Result<(), ResourceError> {
    let item = encode(&name, value)?;
    let lanes = entry(&name, &item.digest());
    entries.push((Arc::from(name), item, lanes));
    Ok(())
}
