//! A Gateway's IR cut into named, content-addressed resources, so an update
//! carries only what changed: one per socket (its settings and the order of
//! its listeners), one per listener (its settings and the order of its HTTP
//! routes), one per HTTP route (named by its rule, so a changed rule is the
//! only thing sent again), one per cluster and one per filter resource. The version of a set is a digest of its names
//! and digests, so every controller replica names the same set alike.

use std::collections::BTreeMap;

use bytes::Bytes;
use std::sync::Arc;

use coxswain_ir::{
    Cluster, Config, Extension, Listener, ProxyProtocol, Route, Serve, Socket, Transport,
};
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

/// One resource's digest and JSON body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub digest: String,
    pub body: Bytes,
}

/// A whole set of resources (what a proxy holds, or should).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub items: BTreeMap<String, Item>,
}

/// A socket resource: the socket without its listeners, which are named.
#[derive(Serialize, Deserialize)]
struct SocketHead {
    transport: Transport,
    address: std::net::IpAddr,
    port: u16,
    proxy_protocol: Option<ProxyProtocol>,
    listeners: Vec<String>,
}

/// A listener resource: the listener without its HTTP routes, which are
/// named (in the order they are matched).
#[derive(Serialize, Deserialize)]
struct ListenerHead {
    listener: Listener,
    routes: Vec<String>,
}

pub fn digest(body: &[u8]) -> String {
    hex(&Sha256::digest(body))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn socket_name(socket: &Socket) -> String {
    let transport = match socket.transport {
        Transport::Tcp => "tcp",
        Transport::Udp => "udp",
    };
    format!("socket/{transport}/{}", socket.addr())
}

fn listener_name(socket: &str, listener: &Listener) -> String {
    let owner = listener.listener_set.as_deref().unwrap_or("-");
    let socket = socket.trim_start_matches("socket/");
    format!("listener/{socket}/{owner}/{}", listener.name)
}

/// A listener's route resource: `route/<listener>/<rule>/<n>`, the n-th
/// IR route of that rule in the listener (one rule may give several).
fn route_name(listener: &str, route: &str) -> String {
    format!("route/{}/{route}", listener.trim_start_matches("listener/"))
}

/// The listener's head and its HTTP routes by name (none for the other
/// kinds, whose few routes stay inline).
fn split_routes(listener: &Listener) -> (ListenerHead, Vec<(String, &Arc<Route>)>) {
    let Serve::Http(routes) = &listener.serve else {
        let head = ListenerHead {
            listener: listener.clone(),
            routes: Vec::new(),
        };
        return (head, Vec::new());
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let named: Vec<(String, &Arc<Route>)> = routes
        .iter()
        .map(|route| {
            let id = &route.id;
            let rule = format!(
                "{:?}/{}/{}/{}",
                id.kind, id.namespace, id.name, id.rule_index
            );
            let n = seen.entry(rule.clone()).or_default();
            *n += 1;
            (format!("{rule}/{n}"), route)
        })
        .collect();
    let head = ListenerHead {
        listener: Listener {
            serve: Serve::Http(Vec::new()),
            ..listener.clone()
        },
        routes: named.iter().map(|(name, _)| name.clone()).collect(),
    };
    (head, named)
}

impl Resources {
    pub fn from_config(config: &Config) -> Result<Resources, ResourceError> {
        let mut resources = Resources::default();
        for socket in &config.sockets {
            let name = socket_name(socket);
            let mut listeners = Vec::new();
            for listener in &socket.listeners {
                let listener_name = listener_name(&name, listener);
                let (head, routes) = split_routes(listener);
                for (route, body) in routes {
                    resources.insert(route_name(&listener_name, &route), &**body)?;
                }
                resources.insert(listener_name.clone(), &head)?;
                listeners.push(listener_name);
            }
            let head = SocketHead {
                transport: socket.transport,
                address: socket.address,
                port: socket.port,
                proxy_protocol: socket.proxy_protocol,
                listeners,
            };
            resources.insert(name, &head)?;
        }
        for cluster in &config.clusters {
            resources.insert(format!("cluster/{}", cluster.name), cluster)?;
        }
        for extension in &config.extensions {
            resources.insert(format!("extension/{}", extension.key), extension)?;
        }
        Ok(resources)
    }

    fn insert(&mut self, name: String, value: &impl Serialize) -> Result<(), ResourceError> {
        // Whole: a pool's proxy needs its keys and hashes (mTLS in transit).
        let body = coxswain_ir::reveal::revealing(|| serde_json::to_vec(value)).map_err(|e| {
            ResourceError::Encode {
                name: name.clone(),
                error: e.to_string(),
            }
        })?;
        let item = Item {
            digest: digest(&body),
            body: Bytes::from(body),
        };
        self.items.insert(name, item);
        Ok(())
    }

    /// The set's name: a digest of the IR version and every (name, digest).
    pub fn version(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(coxswain_ir::IR_VERSION.to_be_bytes());
        for (name, item) in &self.items {
            hash.update(name.as_bytes());
            hash.update([0]);
            hash.update(item.digest.as_bytes());
            hash.update([b'\n']);
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
            .map(|(name, item)| Resource {
                name: name.clone(),
                digest: item.digest.clone(),
                body: item.body.clone(),
            })
            .collect();
        let removals: Vec<String> = held
            .keys()
            .filter(|name| !self.items.contains_key(*name))
            .cloned()
            .collect();
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

    /// This set with `update` applied, checked: every body matches its
    /// digest, the result is the version the update names and it decodes.
    pub fn apply(&self, update: &ConfigUpdate) -> Result<(Resources, Config), ResourceError> {
        if update.ir_version != coxswain_ir::IR_VERSION {
            return Err(ResourceError::IrVersion {
                got: update.ir_version,
                want: coxswain_ir::IR_VERSION,
            });
        }
        let mut next = self.clone();
        for name in &update.removals {
            next.items.remove(name);
        }
        for resource in &update.upserts {
            if digest(&resource.body) != resource.digest {
                return Err(ResourceError::Digest {
                    name: resource.name.clone(),
                });
            }
            next.items.insert(
                resource.name.clone(),
                Item {
                    digest: resource.digest.clone(),
                    body: resource.body.clone(),
                },
            );
        }
        let version = next.version();
        if version != update.version {
            return Err(ResourceError::Version {
                got: version,
                want: update.version.clone(),
            });
        }
        let config = next.to_config()?;
        Ok((next, config))
    }

    /// The IR these resources describe.
    pub fn to_config(&self) -> Result<Config, ResourceError> {
        let mut listeners: BTreeMap<&str, Listener> = BTreeMap::new();
        let mut routes: BTreeMap<&str, Arc<Route>> = BTreeMap::new();
        let mut heads = Vec::new();
        let mut heads_of_listeners = Vec::new();
        let mut config = Config {
            ir_version: coxswain_ir::IR_VERSION,
            ..Config::default()
        };
        for (name, item) in &self.items {
            let kind = name.split('/').next().unwrap_or_default();
            match kind {
                "socket" => heads.push((name, decode::<SocketHead>(name, &item.body)?)),
                "listener" => {
                    let head: ListenerHead = decode(name, &item.body)?;
                    listeners.insert(name, head.listener);
                    heads_of_listeners.push((name, head.routes));
                }
                "route" => {
                    routes.insert(name, Arc::new(decode(name, &item.body)?));
                }
                "cluster" => config.clusters.push(decode::<Cluster>(name, &item.body)?),
                "extension" => config
                    .extensions
                    .push(decode::<Extension>(name, &item.body)?),
                _ => return Err(ResourceError::Unknown(name.clone())),
            }
        }
        for (name, names) in heads_of_listeners {
            let Some(Listener {
                serve: Serve::Http(listed),
                ..
            }) = listeners.get_mut(name.as_str())
            else {
                continue;
            };
            for route in names {
                let key = route_name(name, &route);
                let found =
                    routes
                        .remove(key.as_str())
                        .ok_or_else(|| ResourceError::MissingRoute {
                            listener: name.clone(),
                            route: key.clone(),
                        })?;
                listed.push(found);
            }
        }
        for (name, head) in heads {
            let mut socket = Socket {
                transport: head.transport,
                address: head.address,
                port: head.port,
                listeners: Vec::new(),
                proxy_protocol: head.proxy_protocol,
            };
            for listener in &head.listeners {
                let found = listeners.remove(listener.as_str()).ok_or_else(|| {
                    ResourceError::MissingListener {
                        socket: name.clone(),
                        listener: listener.clone(),
                    }
                })?;
                socket.listeners.push(found);
            }
            config.sockets.push(socket);
        }
        if let Some(orphan) = listeners.keys().chain(routes.keys()).next() {
            return Err(ResourceError::Unknown(orphan.to_string()));
        }
        config.sockets.sort_by(|a, b| {
            (a.transport, a.address, a.port).cmp(&(b.transport, b.address, b.port))
        });
        config.clusters.sort_by(|a, b| a.name.cmp(&b.name));
        config.extensions.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(config)
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
