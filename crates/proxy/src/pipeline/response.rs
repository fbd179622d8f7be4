//! The response phase: the upstream's answer as the client gets it.
//!
//! In order: hop-by-hop headers go (an upgrade's `Upgrade`/`Connection`
//! come back), the rule's then the backendRef's ResponseHeaderModifier
//! edits, Compression (it judges the headers the edits left, so an edit
//! adding `Cache-Control: no-transform` is respected; it sets
//! `Content-Encoding` and `Vary` and wraps the body), the balancer's
//! sticky-session cookie, the route session's token, the
//! request stages' headers (the rate-limit state), then the CORS headers
//! (which no edit can take away).

use http::header::{SET_COOKIE, VARY};
use http::{HeaderName, HeaderValue, Response, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::compression;
use super::context::ResponsePlan;
use crate::balance::Attempt;
use crate::balance::held::HeldBody;
use crate::http::body::ProxyBody;
use crate::http::headers::strip_hop_by_hop;
use crate::http::upgrade;
use crate::route::{Backend, CompiledRoute};

/// A response that switched protocols, relayed as a tunnel.
pub struct Upgraded {
    pub protocol: HeaderValue,
    /// Answered to an HTTP/2 extended CONNECT: a 200, not a 101.
    pub over_h2: bool,
}

/// What the response phase adds besides the route's own edits.
pub struct Additions {
    pub plan: ResponsePlan,
    /// The balancer's new sticky-session cookie.
    pub set_cookie: Option<HeaderValue>,
    /// The route session's (new or renewed) token.
    pub session_token: Option<(HeaderName, HeaderValue)>,
}

pub fn assemble(
    upstream: Response<Incoming>,
    upgraded: Option<Upgraded>,
    route: &CompiledRoute,
    backend: &Backend,
    additions: Additions,
    attempt: Attempt,
) -> Response<ProxyBody> {
    let (mut parts, body) = upstream.into_parts();
    let tunnel = upgraded.is_some();
    strip_hop_by_hop(&mut parts.headers, false);
    match upgraded {
        Some(u) if u.over_h2 => upgrade::as_connect_response(&mut parts),
        Some(u) => upgrade::restore(&mut parts.headers, u.protocol),
        None => {}
    }
    parts.version = Version::HTTP_11;
    for edits in route.response_edits.iter().chain(&backend.response_edits) {
        edits.apply(&mut parts.headers);
    }
    let mut body = HeldBody::new(body, attempt).boxed_unsync();
    let mut plan = additions.plan;
    if let Some(compress) = plan.compression.take().filter(|_| !tunnel) {
        body = compression::apply(compress, &mut parts, body);
    }
    if let Some(cookie) = additions.set_cookie {
        parts.headers.append(SET_COOKIE, cookie);
    }
    if let Some((name, value)) = additions.session_token {
        parts.headers.append(name, value);
    }
    for (name, value) in plan.headers {
        parts.headers.insert(name, value);
    }
    for (name, value) in plan.cors {
        // The backend's own Vary stays; CORS adds Origin to it.
        if name == VARY {
            parts.headers.append(name, value);
        } else {
            parts.headers.insert(name, value);
        }
    }
    Response::from_parts(parts, body)
}
