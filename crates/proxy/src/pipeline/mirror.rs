//! Mirror copies (forwarding): each RequestMirror filter the request was
//! sampled for gets a copy of the request exactly as the upstream will see
//! it, its body streamed to both.

use std::sync::Arc;
use std::time::Duration;

use super::context::Outbound;
use crate::access_log::http::MirrorSeed;
use crate::backend_tls::BackendIdentity;
use crate::handler::Shared;
use crate::http::body::ClientBody;
use crate::mirror::Copied;
use crate::route::CompiledRoute;

pub fn send_copies(
    shared: &Shared,
    route: &CompiledRoute,
    out: &Outbound<'_>,
    identity: Option<&Arc<BackendIdentity>>,
    body: &mut ClientBody,
) {
    if out.mirrors.is_empty() {
        return;
    }
    let copied = Copied {
        method: &out.parts.method,
        headers: &out.parts.headers,
        path_and_query: &out.path_and_query,
        route: &route.label,
        timeout: mirror_timeout(route),
        identity,
    };
    let seed = out.parts.extensions.get::<MirrorSeed>();
    for m in &out.mirrors {
        let record = seed.map(MirrorSeed::record);
        shared.mirrors.send(m, &copied, body.copy(), record);
    }
}

/// A mirror request gets the route's backend timeout, else its request
/// timeout, else a default of its own.
fn mirror_timeout(route: &CompiledRoute) -> Option<Duration> {
    let t = &route.timeouts;
    t.backend_request_ms
        .or(t.request_ms)
        .map(Duration::from_millis)
}
