//! A set of resources turned back into the IR from each resource's cached
//! decoding, so a proxy parses only what an update changed. A listener's
//! routes are found by its name prefix (they sort together), not one
//! formatted name per route.

use std::collections::HashMap;
use std::sync::Arc;

use coxswain_ir::{Config, Serve, Socket};

use crate::resources::{Decoded, ListenerHead, ResourceError, Resources, route_prefix};

pub(crate) fn assemble(resources: &Resources) -> Result<Config, ResourceError> {
    let items = resources.items();
    let mut config = Config {
        ir_version: coxswain_ir::IR_VERSION,
        ..Config::default()
    };
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
            Decoded::Cluster(cluster) => config.clusters.push((**cluster).clone()),
            Decoded::Extension(extension) => config.extensions.push((**extension).clone()),
        }
    }
    let mut placed = 0usize;
    for (name, head) in sockets {
        let mut socket = Socket {
            transport: head.transport,
            address: head.address,
            port: head.port,
            listeners: Vec::new(),
            proxy_protocol: head.proxy_protocol,
        };
        for listener_name in &head.listeners {
            let listener = listeners.remove(listener_name.as_str()).ok_or_else(|| {
                ResourceError::MissingListener {
                    socket: name.clone(),
                    listener: listener_name.clone(),
                }
            })?;
            let mut listener_ir = listener.listener.clone();
            if let Serve::Http(listed) = &mut listener_ir.serve {
                placed += place_routes(resources, listener_name, listener, listed)?;
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
    config
        .sockets
        .sort_by_key(|s| (s.transport, s.address, s.port));
    config.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    config.extensions.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(config)
}

/// Fills `listed` with the listener's routes in its head's order; returns
/// how many route resources it used (all under its prefix, or an error).
fn place_routes(
    resources: &Resources,
    listener_name: &str,
    head: &ListenerHead,
    listed: &mut Vec<Arc<coxswain_ir::Route>>,
) -> Result<usize, ResourceError> {
    let prefix = route_prefix(listener_name);
    let mut by_suffix: HashMap<&str, (&str, &crate::resources::Item)> = resources
        .items()
        .range::<str, _>((
            std::ops::Bound::Included(prefix.as_str()),
            std::ops::Bound::Unbounded,
        ))
        .map_while(|(name, item)| {
            let suffix = name.strip_prefix(prefix.as_str())?;
            Some((suffix, (name.as_str(), item)))
        })
        .collect();
    let found = by_suffix.len();
    listed.reserve(head.routes.len());
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
    }
    if let Some((_, (orphan, _))) = by_suffix.into_iter().next() {
        return Err(ResourceError::Unknown(orphan.to_string()));
    }
    Ok(found)
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
        .cloned()
        .unwrap_or_else(|| "route".to_string())
}
