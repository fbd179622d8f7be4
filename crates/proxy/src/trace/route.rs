//! What a server span says about the route that took its request.

use std::borrow::Cow;

use super::RouteInfo;
use crate::router::{CompiledPath, Hit};

pub fn route_info<'r>(hit: &Hit<'r>) -> RouteInfo<'r> {
    let id = &hit.route.id;
    RouteInfo {
        kind: id.kind.as_str(),
        namespace: &id.namespace,
        name: &id.name,
        rule: match &id.rule_name {
            Some(name) => Cow::Borrowed(name.as_str()),
            None => Cow::Owned(id.rule_index.to_string()),
        },
        gateway: &hit.listener_name.gateway,
        listener: &hit.listener_name.name,
        http_route: match &hit.matched.path {
            CompiledPath::Exact(path) => Some(path.as_str()),
            // Stored without its trailing slash; the root prefix is "".
            CompiledPath::Prefix(prefix) if prefix.is_empty() => Some("/"),
            CompiledPath::Prefix(prefix) => Some(prefix.as_str()),
            CompiledPath::Regex(_) => None,
        },
    }
}
