//! The upstream phase: a session's pinned backend or one chosen by weight,
//! the backendRef's header edits, then the attempts (retries, budgets,
//! breakers: [`crate::retry`]) and, for an upgrade, the tunnel.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use http::header::UPGRADE;

use super::context::Outbound;
use super::{Forwarded, response};
use crate::access_log::{self, TunnelLog, http::Retries, http::UpstreamLog};
use crate::backend_tls::BackendIdentity;
use crate::balance::Stickiness;
use crate::handler::{ConnInfo, Shared};
use crate::http::body::{ClientBody, ClientBodyState, plain};
use crate::http::session::unix_ms;
use crate::http::upgrade;
use crate::retry::Exchange;
use crate::route::{CompiledRoute, Target};

pub async fn forward<'r>(
    shared: &Shared,
    conn: &ConnInfo,
    route: &'r CompiledRoute,
    identity: Option<&Arc<BackendIdentity>>,
    out: Outbound<'r>,
    (body, client_body): (ClientBody, ClientBodyState),
) -> Forwarded<'r> {
    // A valid session goes to the backend holding its endpoint; a new one
    // (or one whose endpoint is gone) is chosen by weight.
    let session = route.session.as_ref().map(|s| {
        let now = unix_ms();
        (s, s.pinned(&out.parts.headers, now), now)
    });
    let pin = session.and_then(|(_, pin, _)| pin);
    let pinned_backend = pin.and_then(|p| route.backend_with_endpoint(p.hash));
    let Some(backend) = pinned_backend.or_else(|| route.choose_backend()) else {
        return Forwarded::local(route, StatusCode::INTERNAL_SERVER_ERROR, "no backend\n");
    };
    let local = |status, text| Forwarded {
        response: plain(status, text),
        counters: route.counters(backend),
    };
    let cluster = match &backend.target {
        Target::Cluster(c) => c,
        Target::Invalid(reason) => {
            tracing::debug!(route = %route.label, %reason, "invalid backend");
            return local(StatusCode::INTERNAL_SERVER_ERROR, "invalid backend\n");
        }
    };
    let mut parts = out.parts;
    for edits in &backend.request_edits {
        edits.apply(&mut parts.headers);
    }
    let exchange = Exchange {
        shared,
        route_label: &route.label,
        policy: &route.retry,
        cluster,
        identity,
        backend_timeout: route.timeouts.backend_request_ms.map(Duration::from_millis),
        upgrade: out.upgrade.is_some(),
        client: out.client,
        stickiness: match session {
            Some(_) => Stickiness::Route(pin.map(|p| p.hash)),
            None => Stickiness::Policy,
        },
        trace: out.trace,
    };
    // The trace context as it goes upstream (a tracer may have set it).
    let trace_id = shared
        .access_log
        .is_on()
        .then(|| access_log::http::trace_id(&parts.headers))
        .flatten();
    let upstreamed = match exchange
        .run(parts, out.path_and_query, body, &client_body)
        .await
    {
        Ok(upstreamed) => upstreamed,
        Err(failed) => {
            let mut answer = local(failed.status, failed.text);
            answer
                .response
                .extensions_mut()
                .insert(Retries(failed.retries));
            return answer;
        }
    };
    let upstream_log = UpstreamLog {
        endpoint: upstreamed.attempt.endpoint.address,
        first_byte: upstreamed.first_byte.into_std(),
        connect: upstreamed.connect,
        trace_id,
        retries: upstreamed.retries,
    };
    let mut upstream_response = upstreamed.response;
    let switching = upstream_response.status() == StatusCode::SWITCHING_PROTOCOLS;
    let protocol = upstream_response.headers().get(UPGRADE).cloned();
    let upgraded = match (out.upgrade, protocol) {
        (Some(client), Some(protocol)) if switching => {
            let backend = hyper::upgrade::on(&mut upstream_response);
            let (idle, metrics) = (shared.upgrade_idle, shared.metrics.clone());
            let log = shared.access_log.is_on().then(TunnelLog::default);
            if client.over_h2 {
                upgrade::spawn_tunnel(client.client, backend, idle, metrics, log.clone());
            } else {
                upgrade::tunnel(
                    &conn.upgrade,
                    client.client,
                    backend,
                    idle,
                    metrics,
                    log.clone(),
                );
            }
            Some((
                response::Upgraded {
                    protocol,
                    over_h2: client.over_h2,
                },
                log,
            ))
        }
        // A 101 must name the protocol (RFC 9110 15.2.2) and answer an
        // upgrade the client asked for.
        _ if switching => {
            tracing::warn!(route = %route.label, upstream = %cluster.name, "upstream switched protocols unasked or without Upgrade");
            return local(StatusCode::BAD_GATEWAY, "upstream switched protocols\n");
        }
        _ => None,
    };
    let session_token = session
        .and_then(|(policy, pin, now)| policy.answer(pin, upstreamed.attempt.endpoint.hash, now));
    let additions = response::Additions {
        plan: out.plan,
        set_cookie: upstreamed.set_cookie,
        session_token,
    };
    let (upgraded, tunnel_log) = upgraded.unzip();
    let mut response = response::assemble(
        upstream_response,
        upgraded,
        route,
        backend,
        additions,
        upstreamed.attempt,
    );
    response.extensions_mut().insert(upstream_log);
    if let Some(log) = tunnel_log.flatten() {
        response.extensions_mut().insert(log);
    }
    Forwarded {
        response,
        counters: route.counters(backend),
    }
}
