//! A Gateway's config encoded as resources, reusing the previous encoding
//! of whatever did not change: an HTTP route the translator kept (the same
//! `Arc`) and a cluster equal to the one before. A route change then costs
//! that route's JSON and digest, not every route's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use coxswain_ir::{Cluster, Config, Listener, Route, Serve};
use serde::Serialize;

use crate::resources::{
    Item, ListenerHead, ResourceError, Resources, SocketHead, listener_name, route_name,
    socket_name,
};

/// The encodings of the last [`Encoder::encode`], kept for the next.
#[derive(Default)]
pub struct Encoder {
    /// By the route's address; the `Arc` is held so the address stays its.
    routes: HashMap<usize, (Arc<Route>, Item)>,
    clusters: HashMap<String, (Cluster, Item)>,
}

impl Encoder {
    pub fn encode(&mut self, config: &Config) -> Result<Resources, ResourceError> {
        // Whole: a pool's proxy needs its keys and hashes (mTLS in transit).
        coxswain_ir::reveal::revealing(|| self.encode_revealed(config))
    }

    fn encode_revealed(&mut self, config: &Config) -> Result<Resources, ResourceError> {
        let mut resources = Resources::default();
        let mut routes = HashMap::new();
        for socket in &config.sockets {
            let name = socket_name(socket);
            let mut listeners = Vec::new();
            for listener in &socket.listeners {
                let listener_name = listener_name(&name, listener);
                let (head, named) = split_routes(listener);
                for (route, body) in named {
                    let key = Arc::as_ptr(body) as usize;
                    let reused = self.routes.get(&key).or_else(|| routes.get(&key));
                    let route = route_name(&listener_name, &route);
                    let item = match reused {
                        Some((_, item)) => item.clone(),
                        None => encode(&route, &**body)?,
                    };
                    routes.insert(key, (body.clone(), item.clone()));
                    resources.insert(route, item);
                }
                resources.insert(listener_name.clone(), encode(&listener_name, &head)?);
                listeners.push(listener_name);
            }
            let head = SocketHead {
                transport: socket.transport,
                address: socket.address,
                port: socket.port,
                proxy_protocol: socket.proxy_protocol,
                listeners,
            };
            let item = encode(&name, &head)?;
            resources.insert(name, item);
        }
        let mut clusters = HashMap::with_capacity(config.clusters.len());
        for cluster in &config.clusters {
            let name = format!("cluster/{}", cluster.name);
            let item = match self.clusters.get(&cluster.name) {
                Some((was, item)) if was == cluster => item.clone(),
                _ => encode(&name, cluster)?,
            };
            clusters.insert(cluster.name.clone(), (cluster.clone(), item.clone()));
            resources.insert(name, item);
        }
        for extension in &config.extensions {
            let name = format!("extension/{}", extension.key);
            let item = encode(&name, extension)?;
            resources.insert(name, item);
        }
        self.routes = routes;
        self.clusters = clusters;
        Ok(resources)
    }
}

fn encode(name: &str, value: &impl Serialize) -> Result<Item, ResourceError> {
    let body = serde_json::to_vec(value).map_err(|e| ResourceError::Encode {
        name: name.to_string(),
        error: e.to_string(),
    })?;
    Ok(Item::new(Bytes::from(body)))
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
