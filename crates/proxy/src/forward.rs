//! Applies a matched route: filters, backend choice and the upstream call.

use std::sync::Arc;
use std::time::Duration;

use http::header::{HOST, LOCATION, SET_COOKIE, UPGRADE};
use http::{HeaderValue, Request, Response, StatusCode, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::backend_tls::BackendIdentity;
use crate::balance::Stickiness;
use crate::balance::held::HeldBody;
use crate::handler::{ConnInfo, Shared};
use crate::http::body::{ClientBody, ProxyBody, plain};
use crate::http::cors::CorsPolicy;
use crate::http::headers::{X_FORWARDED_HOST, add_forwarded, strip_hop_by_hop};
use crate::http::path::apply_modifier;
use crate::http::redirect::{RedirectInput, location};
use crate::http::session::unix_ms;
use crate::http::upgrade;
use crate::listen::client_identity::X_FORWARDED_CLIENT_CERT;
use crate::metrics::StatusCounters;
use crate::mirror::{Copied, MirrorFilter};
use crate::retry::Exchange;
use crate::route::{CompiledRoute, HeaderEdits, RouteFilter, Target};
use crate::router::CompiledMatch;
use coxswain_ir::Redirect;

/// A response and the counters it is attributed to.
pub struct Forwarded<'r> {
    pub response: Response<ProxyBody>,
    pub counters: &'r StatusCounters,
}

impl<'r> Forwarded<'r> {
    pub fn local(route: &'r CompiledRoute, status: StatusCode, text: &'static str) -> Self {
        Forwarded {
            response: plain(status, text),
            counters: &route.local_counters,
        }
    }
}

fn redirect_response(
    r: &Redirect,
    input: &RedirectInput<'_>,
    matched: &CompiledMatch,
) -> Response<ProxyBody> {
    let status = StatusCode::from_u16(r.status_code)
        .ok()
        .filter(StatusCode::is_redirection)
        .unwrap_or(StatusCode::FOUND);
    match HeaderValue::from_str(&location(r, input, matched)) {
        Ok(value) => {
            let mut response = plain(status, "redirecting\n");
            response.headers_mut().insert(LOCATION, value);
            response
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "invalid redirect\n"),
    }
}

pub async fn serve<'r>(
    shared: &Shared,
    conn: ConnInfo,
    route: &'r CompiledRoute,
    matched: &'r CompiledMatch,
    backend_identity: Option<&Arc<BackendIdentity>>,
    host: String,
    mut req: Request<Incoming>,
) -> Forwarded<'r> {
    let connect = upgrade::extended_connect(&req);
    let over_h2 = connect.is_some();
    let upgrade = connect
        .or_else(|| upgrade::requested(&req))
        .map(|protocol| (protocol, hyper::upgrade::on(&mut req)));
    let (mut parts, body) = req.into_parts();
    // Before any route edit: a client's `Connection` list may name only its
    // own headers, never one the gateway sets.
    strip_hop_by_hop(&mut parts.headers, true);
    match &upgrade {
        Some((protocol, _)) if over_h2 => {
            upgrade::connect_as_http1_upgrade(&mut parts, protocol.clone());
        }
        Some((protocol, _)) => upgrade::restore(&mut parts.headers, protocol.clone()),
        None => {}
    }
    // Only the gateway speaks for the client certificate: a client's own
    // claim is dropped, then (when configured) the verified identity set.
    parts.headers.remove(X_FORWARDED_CLIENT_CERT);
    if shared.forward_client_cert
        && let Some(identity) = &conn.client_identity
        && let Ok(value) = HeaderValue::from_str(&identity.xfcc())
    {
        parts.headers.insert(X_FORWARDED_CLIENT_CERT, value);
    }
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    let mut new_path = None;
    let mut new_host = None;
    let mut response_edits: Vec<&HeaderEdits> = Vec::new();
    let mut mirrors: Vec<&MirrorFilter> = Vec::new();
    let mut cors_headers = Vec::new();
    for filter in &route.filters {
        match filter {
            RouteFilter::RequestHeaders(edits) => edits.apply(&mut parts.headers),
            RouteFilter::ResponseHeaders(edits) => response_edits.push(edits),
            RouteFilter::Redirect(r) => {
                let input = RedirectInput {
                    host: &host,
                    path: &path,
                    query: query.as_deref(),
                    listener_port: conn.socket.port(),
                    scheme: conn.scheme(),
                };
                let response = redirect_response(r, &input, matched);
                return Forwarded {
                    response,
                    counters: &route.local_counters,
                };
            }
            RouteFilter::Rewrite(rw) => {
                if let Some(h) = &rw.hostname {
                    new_host = Some(h.clone());
                }
                if let Some(m) = &rw.path {
                    new_path = apply_modifier(m, &path, matched).or(new_path);
                }
            }
            RouteFilter::Cors(cors) if CorsPolicy::is_preflight(&parts.method, &parts.headers) => {
                return Forwarded {
                    response: cors.preflight(&parts.headers),
                    counters: &route.local_counters,
                };
            }
            RouteFilter::Cors(cors) => cors_headers = cors.response_headers(&parts.headers),
            // A tunnel cannot be copied: upgrades are not mirrored.
            RouteFilter::Mirror(m) if upgrade.is_none() && m.sampled() => mirrors.push(m),
            RouteFilter::Mirror(_) => {}
        }
    }
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
    let host_value = match new_host.as_deref().map(HeaderValue::from_str) {
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
    let path_and_query = match &query {
        Some(q) => format!("{}?{q}", new_path.as_deref().unwrap_or(&path)),
        None => new_path.unwrap_or(path),
    };
    let (mut body, client_body) = ClientBody::new(body);
    if !mirrors.is_empty() {
        let copied = Copied {
            method: &parts.method,
            headers: &parts.headers,
            path_and_query: &path_and_query,
            route: &route.label,
            timeout: mirror_timeout(route),
            identity: backend_identity,
        };
        for m in mirrors {
            shared.mirrors.send(m, &copied, body.copy());
        }
    }
    // A valid session goes to the backend holding its endpoint; a new one
    // (or one whose endpoint is gone) is chosen by weight.
    let session = route.session.as_ref().map(|s| {
        let now = unix_ms();
        (s, s.pinned(&parts.headers, now), now)
    });
    let pin = session.and_then(|(_, pin, _)| pin);
    let pinned_backend = pin.and_then(|p| route.backend_with_endpoint(p.hash));
    let Some(backend) = pinned_backend.or_else(|| route.choose_backend()) else {
        return Forwarded::local(route, StatusCode::INTERNAL_SERVER_ERROR, "no backend\n");
    };
    let local = |status, text| Forwarded {
        response: plain(status, text),
        counters: &backend.counters,
    };
    let cluster = match &backend.target {
        Target::Cluster(c) => c,
        Target::Invalid(reason) => {
            tracing::debug!(route = %route.label, %reason, "invalid backend");
            return local(StatusCode::INTERNAL_SERVER_ERROR, "invalid backend\n");
        }
    };
    for filter in &backend.filters {
        match filter {
            RouteFilter::RequestHeaders(edits) => edits.apply(&mut parts.headers),
            RouteFilter::ResponseHeaders(edits) => response_edits.push(edits),
            RouteFilter::Redirect(_)
            | RouteFilter::Rewrite(_)
            | RouteFilter::Mirror(_)
            | RouteFilter::Cors(_) => {}
        }
    }
    let exchange = Exchange {
        shared,
        route_label: &route.label,
        policy: &route.retry,
        cluster,
        identity: backend_identity,
        backend_timeout: route.timeouts.backend_request_ms.map(Duration::from_millis),
        upgrade: upgrade.is_some(),
        client: conn.client.ip(),
        stickiness: match session {
            Some(_) => Stickiness::Route(pin.map(|p| p.hash)),
            None => Stickiness::Policy,
        },
    };
    let upstreamed = match exchange
        .run(parts, path_and_query, body, &client_body)
        .await
    {
        Ok(upstreamed) => upstreamed,
        Err(failed) => return local(failed.status, failed.text),
    };
    let mut upstream_response = upstreamed.response;
    let switching = upstream_response.status() == StatusCode::SWITCHING_PROTOCOLS;
    let protocol = upstream_response.headers().get(UPGRADE).cloned();
    let upgraded = match (upgrade, protocol) {
        (Some((_, client)), Some(protocol)) if switching => {
            let backend = hyper::upgrade::on(&mut upstream_response);
            let (idle, metrics) = (shared.upgrade_idle, shared.metrics.clone());
            if over_h2 {
                upgrade::spawn_tunnel(client, backend, idle, metrics);
            } else {
                upgrade::tunnel(&conn.upgrade, client, backend, idle, metrics);
            }
            Some(protocol)
        }
        // A 101 must name the protocol (RFC 9110 15.2.2) and answer an
        // upgrade the client asked for.
        _ if switching => {
            tracing::warn!(route = %route.label, upstream = %cluster.name, "upstream switched protocols unasked or without Upgrade");
            return local(StatusCode::BAD_GATEWAY, "upstream switched protocols\n");
        }
        _ => None,
    };
    let (mut parts, body) = upstream_response.into_parts();
    strip_hop_by_hop(&mut parts.headers, false);
    match upgraded {
        Some(_) if over_h2 => upgrade::as_connect_response(&mut parts),
        Some(protocol) => upgrade::restore(&mut parts.headers, protocol),
        None => {}
    }
    parts.version = Version::HTTP_11;
    for edits in response_edits {
        edits.apply(&mut parts.headers);
    }
    if let Some(cookie) = upstreamed.set_cookie {
        parts.headers.append(SET_COOKIE, cookie);
    }
    if let Some((policy, pin, now)) = session
        && let Some((name, value)) = policy.answer(pin, upstreamed.attempt.endpoint.hash, now)
    {
        parts.headers.append(name, value);
    }
    for (name, value) in cors_headers {
        // The backend's own Vary stays; CORS adds Origin to it.
        if name == http::header::VARY {
            parts.headers.append(name, value);
        } else {
            parts.headers.insert(name, value);
        }
    }
    Forwarded {
        response: Response::from_parts(
            parts,
            HeldBody::new(body, upstreamed.attempt).boxed_unsync(),
        ),
        counters: &backend.counters,
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
