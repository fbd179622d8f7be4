//! The upstream exchange of one request: attempts on the chosen backend's
//! endpoints, retried as the route's policy says.
//!
//! - With a `retry` stanza: a listed response code, a connection error or
//!   a backend-request timeout is tried again (on the next endpoint) up to
//!   `attempts` times, waiting `backoff`, doubled for each further retry.
//! - Without one: a failed connection is tried again on another endpoint,
//!   up to [`UNCONFIGURED_RETRIES`] times: one that never connected
//!   (refused, unreachable, connect timeout) always, one that broke before
//!   any response only for an idempotent method (RFC 9110 9.2.2). A pod
//!   that just went away then costs no request.
//! - A request body is resent only when it could be kept: bodiless
//!   requests, and (with a stanza) bodies of at most [`REPLAY_LIMIT`]
//!   bytes, read whole before the first attempt. A larger or unsized body
//!   streams straight through and is never retried.
//!
//! The route's request timeout bounds every attempt and wait together
//! (the handler enforces it); the backend-request timeout bounds each one.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response, StatusCode, Version};
use http_body::Body as _;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use coxswain_ir::Retry;
use tokio::time::Instant;

use crate::backend_tls::BackendIdentity;
use crate::balance::{Attempt, Pick, RequestKey, Stickiness, Tried};
use crate::cluster::ClusterState;
use crate::connect_timing::ConnectTiming;
use crate::handler::Shared;
use crate::http::body::{ClientBody, ClientBodyState};
use crate::rejections::RejectReason;
use crate::trace::{AttemptSpan, TraceScope};
use crate::upstream::{Via, frame_unsized_body, upstream_uri};

/// The largest body kept so that it can be sent again.
pub const REPLAY_LIMIT: u64 = 64 * 1024;

/// Retries of a failed connection without a `retry` stanza: enough to step
/// over two endpoints that went away at once.
pub const UNCONFIGURED_RETRIES: u32 = 2;

/// The longest wait between two attempts, however many retries came before.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A route's retry policy, compiled.
#[derive(Debug)]
pub struct RetryPolicy {
    codes: Vec<u16>,
    retries: u32,
    backoff: Duration,
    /// A stanza was configured (else only refused connections are retried).
    configured: bool,
}

impl RetryPolicy {
    pub fn compile(retry: Option<&Retry>) -> Self {
        match retry {
            Some(r) => RetryPolicy {
                codes: r.codes.clone(),
                retries: r.attempts,
                backoff: Duration::from_millis(r.backoff_ms),
                configured: true,
            },
            None => RetryPolicy {
                codes: Vec::new(),
                retries: UNCONFIGURED_RETRIES,
                backoff: Duration::ZERO,
                configured: false,
            },
        }
    }

    /// The wait before retry number `retry` (1-based).
    fn backoff(&self, retry: u32) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        self.backoff
            .saturating_mul(doubling)
            .min(MAX_BACKOFF.max(self.backoff))
    }
}

/// How an exchange ended when it produced no upstream response.
#[derive(Debug, PartialEq, Eq)]
pub struct Failed {
    pub status: StatusCode,
    pub text: &'static str,
    /// Attempts made again before giving up.
    pub retries: u32,
}

const fn failed(status: StatusCode, text: &'static str) -> Failed {
    Failed {
        status,
        text,
        retries: 0,
    }
}

/// Everything one exchange needs besides the request.
pub struct Exchange<'a> {
    pub shared: &'a Shared,
    pub route_label: &'a str,
    pub policy: &'a RetryPolicy,
    pub cluster: &'a ClusterState,
    pub identity: Option<&'a Arc<BackendIdentity>>,
    pub backend_timeout: Option<Duration>,
    /// An upgrade request: never retried (the client's side is taken once).
    pub upgrade: bool,
    /// The client's address, for source-IP hashing.
    pub client: std::net::IpAddr,
    /// The route's session pin, or the cluster policy's stickiness.
    pub stickiness: Stickiness,
    /// The request's trace: each attempt is a client span in it.
    pub trace: Option<&'a TraceScope>,
}

/// The upstream's response, with the attempt that got it (held until the
/// response body ends: least_conn counts it in flight until then) and the
/// session cookie to set, if sticky sessions chose a new endpoint.
pub struct Upstreamed {
    pub response: Response<Incoming>,
    pub attempt: Attempt,
    pub set_cookie: Option<http::HeaderValue>,
    /// Attempts made again before this one.
    pub retries: u32,
    /// When its response headers arrived.
    pub first_byte: Instant,
    /// What it spent opening a connection (zero on a reused one).
    pub connect: Duration,
}

/// Why one attempt failed.
enum AttemptError {
    Connect,
    TimedOut,
    /// The connection broke after the request may have reached the
    /// backend, before any response came.
    Dropped,
    /// Not the backend's doing (no endpoint, TLS misconfigured, ...).
    Other,
}

impl AttemptError {
    /// The attempt span's `error.type`.
    fn as_str(&self) -> &'static str {
        match self {
            AttemptError::Connect => "connect_error",
            AttemptError::TimedOut => "timeout",
            AttemptError::Dropped => "connection_dropped",
            AttemptError::Other => "no_attempt",
        }
    }
}

impl Exchange<'_> {
    /// Sends `parts` (with `path_and_query`) and `body`, retrying as the
    /// policy allows. `client_body` tells a client's broken body from a
    /// backend failure.
    pub async fn run(
        &self,
        parts: Parts,
        path_and_query: String,
        body: ClientBody,
        client_body: &ClientBodyState,
    ) -> Result<Upstreamed, Failed> {
        let mut first = Some(body);
        let replay = match self.replayable(&mut first).await {
            Ok(replay) => replay,
            Err(()) if client_body.too_large() => return Err(self.too_large()),
            Err(()) => {
                self.shared
                    .metrics
                    .rejections
                    .record(RejectReason::BodyFraming);
                return Err(failed(StatusCode::BAD_REQUEST, "malformed request body\n"));
            }
        };
        if let Some(budget) = self.cluster.retry_budget() {
            budget.first_attempt(Instant::now());
        }
        let mut retry = 0;
        // Endpoints earlier attempts used: a retry goes elsewhere when it can.
        let mut tried = Tried::default();
        loop {
            let body = match (&replay, first.take()) {
                (Some(bytes), _) => ClientBody::from_bytes(bytes.clone()),
                (None, Some(body)) => body,
                // Not reached: without a replayable body there is no retry.
                (None, None) => ClientBody::from_bytes(Bytes::new()),
            };
            let mut span = AttemptSpan::start(self.trace, &parts.method, &self.cluster.name, retry);
            let result = self
                .attempt(&parts, &path_and_query, body, &mut tried, &mut span)
                .await;
            match &result {
                Ok(up) => span.answered(up.response.status()),
                Err((kind, failure)) => span.failed(kind.as_str(), failure.text),
            }
            drop(span);
            let may_retry = retry < self.policy.retries && replay.is_some() && !self.upgrade;
            let retryable = match &result {
                Ok(up) => {
                    self.policy.configured
                        && self.policy.codes.contains(&up.response.status().as_u16())
                }
                Err((AttemptError::Connect, _)) => true,
                Err((AttemptError::Dropped, _)) => {
                    self.policy.configured || parts.method.is_idempotent()
                }
                Err((AttemptError::TimedOut | AttemptError::Other, _)) => self.policy.configured,
            };
            if !(may_retry && retryable) {
                let retried = |mut f: Failed| {
                    f.retries = retry;
                    f
                };
                return match result {
                    Ok(mut up) => {
                        up.retries = retry;
                        Ok(up)
                    }
                    // The client broke its body's framing: its fault, not
                    // the backend's; the upstream request was aborted with it.
                    Err(_) if client_body.too_large() => Err(retried(self.too_large())),
                    Err(_) if client_body.broken() => {
                        self.shared
                            .metrics
                            .rejections
                            .record(RejectReason::BodyFraming);
                        Err(retried(failed(
                            StatusCode::BAD_REQUEST,
                            "malformed request body\n",
                        )))
                    }
                    Err((_, failure)) => Err(retried(failure)),
                };
            }
            // Past the backend's retry budget a retry is answered 503, as
            // the spec requires, instead of the failed attempt's answer.
            if let Some(budget) = self.cluster.retry_budget()
                && !budget.try_retry(Instant::now())
            {
                let metrics = &self.shared.metrics;
                metrics
                    .retry_budget_exhausted
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!(route = self.route_label, upstream = %self.cluster.name, policy = %budget.config.policy, "retry budget exhausted");
                let mut exhausted =
                    failed(StatusCode::SERVICE_UNAVAILABLE, "retry budget exhausted\n");
                exhausted.retries = retry;
                return Err(exhausted);
            }
            retry += 1;
            self.shared.metrics.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(route = self.route_label, upstream = %self.cluster.name, retry, "retrying");
            let wait = self.policy.backoff(retry);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
    }

    /// The body as bytes that can be sent again, when retries are possible
    /// and the body is small enough; `None` leaves it to stream once.
    /// The client's body passed the route's size limit mid-stream.
    fn too_large(&self) -> Failed {
        self.shared
            .metrics
            .rejections
            .record(RejectReason::BodyTooLarge);
        failed(StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n")
    }

    async fn replayable(&self, body: &mut Option<ClientBody>) -> Result<Option<Bytes>, ()> {
        let Some(b) = body.as_ref() else {
            return Ok(None);
        };
        if self.upgrade || self.policy.retries == 0 {
            return Ok(None);
        }
        if b.is_end_stream() {
            return Ok(Some(Bytes::new()));
        }
        let small = b.size_hint().exact().is_some_and(|n| n <= REPLAY_LIMIT);
        if !(self.policy.configured && small) {
            return Ok(None);
        }
        let Some(whole) = body.take() else {
            return Ok(None);
        };
        match whole.collect().await {
            Ok(collected) => Ok(Some(collected.to_bytes())),
            Err(_) => Err(()),
        }
    }

    async fn attempt(
        &self,
        parts: &Parts,
        path_and_query: &str,
        body: ClientBody,
        tried: &mut Tried,
        span: &mut AttemptSpan<'_>,
    ) -> Result<Upstreamed, (AttemptError, Failed)> {
        let other = |f: Failed| Err((AttemptError::Other, f));
        let upstreams = self.cluster.upstreams(&self.shared.upstreams);
        let via = match Via::for_cluster(self.cluster, self.identity, upstreams.connect_timeout) {
            Ok(via) => via,
            Err(e) => {
                tracing::warn!(route = self.route_label, upstream = %self.cluster.name, error = %e, "backend TLS");
                return other(failed(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "backend TLS misconfigured\n",
                ));
            }
        };
        if self.upgrade && matches!(via, Via::H2c) {
            // HTTP/2 has no Upgrade, and an h2c backend may not speak HTTP/1.1.
            return other(failed(StatusCode::BAD_GATEWAY, "upstream cannot upgrade\n"));
        }
        let key = RequestKey {
            headers: &parts.headers,
            path_and_query,
            client: self.client,
        };
        let mut chosen = match self.cluster.pick(
            &key,
            tried.as_slice(),
            self.stickiness,
            Instant::now(),
        ) {
            Pick::Chosen(chosen) => chosen,
            Pick::Empty => {
                return other(failed(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "no healthy upstream\n",
                ));
            }
            // Fail fast: every endpoint's breaker is open.
            Pick::AllOpen => {
                tracing::debug!(route = self.route_label, upstream = %self.cluster.name, "every endpoint's circuit breaker is open");
                return other(failed(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "upstream circuit open\n",
                ));
            }
        };
        let endpoint = chosen.attempt.endpoint.address;
        tried.push(endpoint);
        let mut headers = parts.headers.clone();
        let Some(uri) = upstream_uri(&via, endpoint, &mut headers, path_and_query.to_string())
        else {
            return other(failed(StatusCode::BAD_REQUEST, "invalid request path\n"));
        };
        if !matches!(via, Via::H2c) {
            frame_unsized_body(&parts.method, &mut headers, body.is_end_stream());
        }
        span.endpoint(endpoint, &uri);
        span.inject(&mut headers);
        let mut req = Request::new(body);
        *req.method_mut() = parts.method.clone();
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        *req.version_mut() = match via {
            Via::Http1 | Via::Tls(..) => Version::HTTP_11,
            Via::H2c => Version::HTTP_2,
        };
        *req.extensions_mut() = parts.extensions.clone();
        let sent = Instant::now();
        // Boxed: held by both awaits below, it would size this future twice.
        let call = Box::pin(upstreams.send(via, endpoint, req, self.upgrade));
        let result = match self.backend_timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(r) => r,
                Err(_) => {
                    chosen.attempt.record(false, Instant::now());
                    tracing::warn!(route = self.route_label, upstream = %self.cluster.name, %endpoint, "upstream timed out");
                    return Err((
                        AttemptError::TimedOut,
                        failed(StatusCode::GATEWAY_TIMEOUT, "upstream timed out\n"),
                    ));
                }
            },
            None => call.await,
        };
        let now = Instant::now();
        match &result {
            Ok(response) => chosen
                .attempt
                .record(!response.status().is_server_error(), now),
            Err(_) => chosen.attempt.record(false, now),
        }
        let set_cookie = chosen.set_cookie;
        let attempt = chosen.attempt;
        result.map(|response| Upstreamed {
            connect: ConnectTiming::spent(&response, sent),
            response,
            attempt,
            set_cookie,
            retries: 0,
            first_byte: now,
        }).map_err(|e| {
            if e.is_connect {
                self.shared.metrics.connect_errors.fetch_add(1, Ordering::Relaxed);
            }
            tracing::warn!(route = self.route_label, upstream = %self.cluster.name, %endpoint, error = %e, "upstream request failed");
            let kind = if e.is_connect {
                AttemptError::Connect
            } else {
                AttemptError::Dropped
            };
            (kind, failed(StatusCode::BAD_GATEWAY, "upstream unavailable\n"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff_ms: u64) -> RetryPolicy {
        RetryPolicy::compile(Some(&Retry {
            codes: vec![503],
            attempts: 5,
            backoff_ms,
        }))
    }

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        let p = policy(100);
        let waits: Vec<u128> = (1..=5).map(|n| p.backoff(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1600]);
        assert_eq!(policy(4_000).backoff(4), MAX_BACKOFF);
        assert_eq!(
            policy(20_000).backoff(3),
            Duration::from_secs(20),
            "never below the minimum"
        );
    }

    #[test]
    fn no_stanza_retries_a_failed_connection_twice_at_once() {
        let p = RetryPolicy::compile(None);
        assert_eq!((p.retries, p.configured), (UNCONFIGURED_RETRIES, false));
        assert_eq!(p.backoff(1), Duration::ZERO);
    }
}
