//! The request pipeline: what happens to a request once a route took it,
//! in fixed phases. Each phase's stages live in their own file and run in
//! the order below; within a phase, a rule's filters keep their spec order.
//!
//! | Phase | Stages | Why at this point |
//! | --- | --- | --- |
//! | hygiene | hop-by-hop strip, upgrade kept, `x-forwarded-client-cert` | before any filter: a client's `Connection` list can only name its own headers, and only the gateway speaks for the client certificate |
//! | network | IpAccessControl; filters that cannot be applied (a missing ExtensionRef) refuse every request | who may send requests here at all, before any work is spent |
//! | admission | CORS preflight | a browser's preflight carries no credentials, so it is answered before authentication |
//! | authn | CoxswainExternalAuth (the authorization service's denial, 503 when it cannot answer, 413 past its body cap; a Gateway's policy before the rule's own), BasicAuth (401 with a challenge), JwtAuth (401 with a `Bearer` challenge, 503 without keys; claims to request headers and to the request context for the limits phase) | who the client is, before anything spends work on it |
//! | authz | (authorisation filters) | needs the identity |
//! | limits | RateLimit (429 with `Retry-After`, `RateLimit` headers on every answer; global mode awaits its Redis store, 503 or admitted when it is away; a JwtClaim key reads the claims JwtAuth verified), RequestSizeLimit (413 on a `Content-Length` past the limit; a streamed body is cut off where it passes it) | counted per identity, after refusals |
//! | transforms | request header edits, URL rewrite, PathRewriteRegex, redirect, mirror sampling, Compression (the coding the client accepts, recorded for the response) | what the upstream (or the redirect) sees; a redirect answers only an admitted request |
//! | forwarding | `X-Forwarded-*`, `Host`, the mirror copies | the request as the upstream will see it, copied to mirrors |
//! | upstream | session pin, backend choice, backendRef header edits, attempts and retries | [`upstream`] |
//! | response | hop-by-hop strip, response header edits (rule, then backendRef), Compression (headers, then the body streamed through the encoder), session token, CORS headers | [`response`] |
//!
//! A stage either lets the request go on or answers it itself
//! ([`Flow::Answer`]); an answered request never reaches a later stage or
//! a backend.

mod basic_auth;
mod compression;
mod context;
mod cors;
pub mod extensions;
mod external_auth;
pub mod headers;
mod hygiene;
mod ip_access;
mod jwt_auth;
mod mirror;
mod path_rewrite;
mod rate_limit;
mod redirect;
mod request_body;
mod response;
mod rewrite;
mod size_limit;
mod stage;
mod upstream;

use http::header::CONNECTION;
use http::{HeaderValue, Request, Response, StatusCode, Version};
use hyper::body::Incoming;

use crate::access_log::http::{AnsweredBy, ReceivedBytes};
use crate::handler::{ConnInfo, Shared};
use crate::http::body::{ClientBody, ClientBodyState, ProxyBody, plain};
use crate::metrics::StatusCounters;
use crate::route::CompiledRoute;
use crate::router::Hit;
use crate::trace::TraceScope;
use request_body::RequestBody;

pub use stage::{Phase, PlannedStage, RequestStages, compile as compile_stages};

/// What a stage decided.
pub enum Flow {
    /// On to the next stage.
    Next,
    /// The gateway answers; nothing later runs.
    Answer(Response<ProxyBody>),
}

/// A response and the counters it is attributed to.
pub struct Forwarded<'r> {
    pub response: Response<ProxyBody>,
    pub counters: &'r StatusCounters,
}

impl<'r> Forwarded<'r> {
    pub fn local(route: &'r CompiledRoute, status: StatusCode, text: &'static str) -> Self {
        Forwarded {
            response: plain(status, text),
            counters: route.local_counters(),
        }
    }
}

/// Runs `req` through the pipeline of the route its lookup `hit`.
pub async fn serve<'r>(
    shared: &'r Shared,
    conn: ConnInfo,
    hit: Hit<'r>,
    host: String,
    req: Request<Incoming>,
    trace: Option<&'r TraceScope>,
) -> Forwarded<'r> {
    let Hit {
        route,
        matched,
        backend_identity,
        ..
    } = hit;
    let mut ctx = hygiene::admit(shared, &conn, matched, host, req);
    ctx.trace = trace;
    let http1 = ctx.parts.version < Version::HTTP_2;
    if let Flow::Answer(mut response) = route.stages.run(&mut ctx).await {
        if http1 && !ctx.body.is_end_stream() {
            unread_body(&conn, &mut response);
        }
        return Forwarded {
            response,
            counters: route.local_counters(),
        };
    }
    let body = std::mem::replace(&mut ctx.body, RequestBody::Broken);
    let out = hygiene::forwarding(shared, &conn, ctx);
    let (mut body, client_body) = match body {
        RequestBody::Unread(incoming) => ClientBody::new(incoming, out.body_limit),
        // Read whole by a check: the upstream gets the same bytes.
        RequestBody::Whole(bytes) if out.body_limit.is_none_or(|l| bytes.len() as u64 <= l) => {
            let len = bytes.len() as u64;
            (ClientBody::from_bytes(bytes), ClientBodyState::intact(len))
        }
        RequestBody::Whole(_) | RequestBody::TooLarge { .. } => {
            let mut response = plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n");
            response.extensions_mut().insert(AnsweredBy("size_limit"));
            if http1 {
                unread_body(&conn, &mut response);
            }
            return Forwarded {
                response,
                counters: route.local_counters(),
            };
        }
        RequestBody::Broken => {
            return Forwarded::local(route, StatusCode::BAD_REQUEST, "bad request body\n");
        }
    };
    let state = client_body.clone();
    mirror::send_copies(shared, route, &out, backend_identity, &mut body);
    let mut forwarded = upstream::forward(
        shared,
        &conn,
        route,
        backend_identity,
        out,
        (body, client_body),
    )
    .await;
    if http1 && state.too_large() {
        unread_body(&conn, &mut forwarded.response);
    }
    if state.too_large() {
        forwarded
            .response
            .extensions_mut()
            .insert(AnsweredBy("size_limit"));
    }
    forwarded
        .response
        .extensions_mut()
        .insert(ReceivedBytes(state));
    forwarded
}

/// An HTTP/1 answer given before the client sent all of its body: the
/// connection closes after it, lingering so the client reads the answer.
fn unread_body(conn: &ConnInfo, response: &mut Response<ProxyBody>) {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    conn.linger.want();
}
