//! A set of resources turned back into the IR from each resource's cached
//! decoding, so a proxy parses only what an update changed. A listener's
//! routes are found by its name prefix (they sort together), not one
//! formatted name per route. The result remembers where each route and
//! cluster sits, so an update that only changes existing ones patches the
//! previous config instead of assembling it again.

use std::collections::HashMap;
use std::sync::Arc;

use coxswain_ir::{Config, Route, Serve, Socket};

use crate::item::{Decoded, Item, ListenerHead};
use crate::resources::{ResourceError, Resources, route_prefix};

/// A config and where its routes and clusters came from.
#[derive(Clone, Debug)]
pub(crate) struct Assembled {
    config: Arc<Config>,
    positions: Arc<HashMap<Arc<str>, Position>>,
}

#[derive(Clone, Copy, Debug)]
enum Position {
    Route {
        socket: usize,
        listener: usize,
        index: usize,
    },
    Cluster(usize),
}

impl Assembled {
    pub(crate) fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// This config with the resources `changed` (each already a route or
    /// cluster here) taken from `resources`; `None` when one is anything
    /// else, or does not decode (assemble again, which says why).
    pub(crate) fn patched<'a>(
        &self,
        resources: &Resources,
        changed: impl Iterator<Item = &'a str>,
    ) -> Option<Assembled> {
        let mut config = (*self.config).clone();
        for name in changed {
            let item = resources.items().get(name)?;
            match (self.positions.get(name)?, item.decoded(name).ok()?) {
                (
                    Position::Route {
                        socket,
                        listener,
                        index,
                    },
                    Decoded::Route(route),
                ) => {
                    let listener = config
                        .sockets
                        .get_mut(*socket)?
                        .listeners
                        .get_mut(*listener)?;
                    let Serve::Http(routes) = &mut listener.serve else {
                        return None;
                    };
                    *routes.get_mut(*index)? = route.clone();
                }
                (Position::Cluster(index), Decoded::Cluster(cluster)) => {
                    *config.clusters.get_mut(*index)? = cluster.clone();
                }
                _ => return None,
            }
        }
        Some(Assembled {
            config: Arc::new(config),
            positions: self.positions.clone(),
        })
    }

    /// Assembles every resource.
    pub(crate) fn of(resources: &Resources) -> Result<Assembled, ResourceError> {
        let items = resources.items();
        let mut config = Config {
            ir_version: coxswain_ir::IR_VERSION,
            ..Config::default()
        };
        let mut positions = HashMap::new();
        let mut sockets = Vec::new();
        let mut listeners: HashMap<&str, &Arc<ListenerHead>> = HashMap::new();
        let mut routes = 0usize;
        for (name, item) in items {
            match item.decoded(name)? {
                Decoded::Socket(head) => sockets.push((name, head)),
                Decoded::Listener(head) => {
                    listeners.insert(name, head);
                }
                Decoded::Route(_) => routes += 1,
                Decoded::Cluster(cluster) => {
                    positions.insert(name.clone(), Position::Cluster(config.clusters.len()));
                    config.clusters.push(cluster.clone());
                }
                Decoded::Extension(extension) => config.extensions.push((**extension).clone()),
            }
        }
        // Names sort clusters as their names do; the IR's order is by name.
        let sorted = config.clusters.is_sorted_by(|a, b| a.name <= b.name);
        if !sorted {
            config.clusters.sort_by(|a, b| a.name.cmp(&b.name));
            positions.retain(|_, p| !matches!(p, Position::Cluster(_)));
        }
        config.extensions.sort_by(|a, b| a.key.cmp(&b.key));
        sockets.sort_by_key(|(_, head)| (head.transport, head.address, head.port));
        let mut placed = 0usize;
        for (socket_index, (name, head)) in sockets.into_iter().enumerate() {
            let mut socket = Socket {
                transport: head.transport,
                address: head.address,
                port: head.port,
                listeners: Vec::new(),
                proxy_protocol: head.proxy_protocol,
            };
            for (listener_index, listener_name) in head.listeners.iter().enumerate() {
                let listener = listeners.remove(listener_name.as_str()).ok_or_else(|| {
                    ResourceError::MissingListener {
                        socket: name.to_string(),
                        listener: listener_name.clone(),
                    }
                })?;
                let mut listener_ir = listener.listener.clone();
                if let Serve::Http(listed) = &mut listener_ir.serve {
                    let names = place_routes(resources, listener_name, listener, listed)?;
                    placed += names.len();
                    for (index, route) in names.into_iter().enumerate() {
                        let position = Position::Route {
                            socket: socket_index,
                            listener: listener_index,
                            index,
                        };
                        positions.insert(route, position);
                    }
                }
                socket.listeners.push(listener_ir);
            }
            config.sockets.push(socket);
        }
        if let Some(orphan) = listeners.keys().next() {
            return Err(ResourceError::Unknown(orphan.to_string()));
        }
        if placed != routes {
            return Err(ResourceError::Unknown(orphan_route(resources)));
        }
        Ok(Assembled {
            config: Arc::new(config),
            positions: Arc::new(positions),
        })
    }
}

/// Fills `listed` with the listener's routes in its head's order and
/// returns their names; every route resource under its prefix must be
/// used.
fn place_routes(
    resources: &Resources,
    listener_name: &str,
    head: &ListenerHead,
    listed: &mut Vec<Arc<Route>>,
) -> Result<Vec<Arc<str>>, ResourceError> {
    let prefix = route_prefix(listener_name);
    let mut by_suffix: HashMap<&str, (&Arc<str>, &Item)> = resources
        .items()
        .range::<str, _>((
            std::ops::Bound::Included(prefix.as_str()),
            std::ops::Bound::Unbounded,
        ))
        .map_while(|(name, item)| {
            let suffix = name.strip_prefix(prefix.as_str())?;
            Some((suffix, (name, item)))
        })
        .collect();
    listed.reserve(head.routes.len());
    let mut names = Vec::with_capacity(head.routes.len());
    for route in &head.routes {
        let (name, item) =
            by_suffix
                .remove(route.as_str())
                .ok_or_else(|| ResourceError::MissingRoute {
                    listener: listener_name.to_string(),
                    route: format!("{prefix}{route}"),
                })?;
        match item.decoded(name)? {
            Decoded::Route(route) => listed.push(route.clone()),
            _ => return Err(ResourceError::Unknown(name.to_string())),
        }
        names.push(name.clone());
    }
    if let Some((_, (orphan, _))) = by_suffix.into_iter().next() {
        return Err(ResourceError::Unknown(orphan.to_string()));
    }
    Ok(names)
}

/// A route resource no listener names (for the error).
fn orphan_route(resources: &Resources) -> String {
    let prefixes: Vec<String> = resources
        .items()
        .keys()
        .filter(|name| name.starts_with("listener/"))
        .map(|name| route_prefix(name))
        .collect();
    resources
        .items()
        .keys()
        .filter(|name| name.starts_with("route/"))
        .find(|name| !prefixes.iter().any(|p| name.starts_with(p.as_str())))
        .map(|name| name.to_string())
        .unwrap_or_else(|| "route".to_string())
}
