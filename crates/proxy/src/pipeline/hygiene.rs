//! The gateway's own header work around a route's stages: what it removes
//! before any filter runs, and what it adds once the filters are done.

use http::header::HOST;
use http::request::Parts;
use http::{HeaderValue, Request};
use hyper::body::Incoming;

use super::context::{Outbound, RequestCtx, ResponsePlan, UpgradeRequest};
use super::request_body::RequestBody;
use crate::handler::{ConnInfo, Shared};
use crate::http::headers::{X_FORWARDED_HOST, add_forwarded, strip_hop_by_hop};
use crate::http::upgrade;
use crate::listen::client_identity::X_FORWARDED_CLIENT_CERT;
use crate::router::CompiledMatch;

/// The request ready for the route's stages: hop-by-hop headers gone
/// (before any route edit, so a client's `Connection` list may name only
/// its own headers, never one the gateway sets), an upgrade kept aside,
/// and the client certificate spoken for by the gateway alone.
pub fn admit<'r>(
    shared: &'r Shared,
    conn: &ConnInfo,
    matched: &'r CompiledMatch,
    host: String,
    mut req: Request<Incoming>,
) -> RequestCtx<'r> {
    let connect = upgrade::extended_connect(&req);
    let over_h2 = connect.is_some();
    let upgrade = connect
        .or_else(|| upgrade::requested(&req))
        .map(|protocol| UpgradeRequest {
            protocol,
            client: hyper::upgrade::on(&mut req),
            over_h2,
        });
    let (mut parts, body) = req.into_parts();
    strip_hop_by_hop(&mut parts.headers, true);
    match &upgrade {
        Some(u) if u.over_h2 => upgrade::connect_as_http1_upgrade(&mut parts, u.protocol.clone()),
        Some(u) => upgrade::restore(&mut parts.headers, u.protocol.clone()),
        None => {}
    }
    // A client's own claim is dropped, then (when configured) the verified
    // identity set.
    parts.headers.remove(X_FORWARDED_CLIENT_CERT);
    if shared.forward_client_cert
        && let Some(identity) = &conn.client_identity
        && let Ok(value) = HeaderValue::from_str(&identity.xfcc())
    {
        parts.headers.insert(X_FORWARDED_CLIENT_CERT, value);
    }
    RequestCtx {
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        parts,
        matched,
        client: conn.client.ip(),
        listener_port: conn.socket.port(),
        upstreams: &shared.upstreams,
        scheme: conn.scheme(),
        host,
        new_host: None,
        new_path: None,
        upgrade,
        mirrors: Vec::new(),
        body_limit: None,
        claims: None,
        body: RequestBody::Unread(body),
        plan: ResponsePlan::default(),
        trace: None,
    }
}

/// After the stages: `X-Forwarded-*`, the `Host` the upstream gets (a
/// rewritten one, with the original in `X-Forwarded-Host`), and the path
/// and query it is asked for.
pub fn forwarding<'r>(shared: &Shared, conn: &ConnInfo, ctx: RequestCtx<'r>) -> Outbound<'r> {
    let mut parts: Parts = ctx.parts;
    add_forwarded(
        &mut parts.headers,
        conn.client.ip(),
        conn.scheme(),
        &shared.forwarded,
    );
    let original_host = parts.headers.get(HOST).cloned().or_else(|| {
        parts
            .uri
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
    });
    let host_value = match ctx.new_host.as_deref().map(HeaderValue::from_str) {
        Some(Ok(rewritten)) => {
            if let Some(original) = &original_host
                && !parts.headers.contains_key(X_FORWARDED_HOST)
            {
                parts.headers.insert(X_FORWARDED_HOST, original.clone());
            }
            Some(rewritten)
        }
        _ => original_host,
    };
    if let Some(value) = host_value {
        parts.headers.insert(HOST, value);
    }
    let path = ctx.new_path.unwrap_or(ctx.path);
    Outbound {
        parts,
        path_and_query: match &ctx.query {
            Some(q) => format!("{path}?{q}"),
            None => path,
        },
        client: ctx.client,
        upgrade: ctx.upgrade,
        mirrors: ctx.mirrors,
        body_limit: ctx.body_limit,
        plan: ctx.plan,
        trace: ctx.trace,
    }
}
