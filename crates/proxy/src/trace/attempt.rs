//! The client span of one upstream attempt: each retry is its own span,
//! numbered by `http.request.resend_count`, and the parent of what the
//! backend records for it.

use std::net::SocketAddr;

use http::{HeaderMap, Method, StatusCode, Uri};

use super::scope::{ChildSpan, TraceScope};
use super::server::method_name;

/// Nothing at all when tracing is off.
pub struct AttemptSpan<'s>(Option<ChildSpan<'s>>);

impl<'s> AttemptSpan<'s> {
    /// Attempt number `retry + 1` of a request to `upstream`'s endpoints.
    pub fn start(
        scope: Option<&'s TraceScope>,
        method: &Method,
        upstream: &str,
        retry: u32,
    ) -> Self {
        AttemptSpan(scope.map(|scope| {
            let name = method_name(method);
            let mut span = scope.child(name);
            span.set("http.request.method", name);
            span.set("coxswain.upstream", upstream.to_string());
            if retry > 0 {
                span.set("http.request.resend_count", retry);
            }
            span
        }))
    }

    /// The endpoint chosen and the URL asked of it (its query left out:
    /// it may carry credentials).
    pub fn endpoint(&mut self, endpoint: SocketAddr, uri: &Uri) {
        let Some(span) = &mut self.0 else {
            return;
        };
        span.set("server.address", endpoint.ip().to_string());
        span.set("server.port", endpoint.port());
        span.set("network.peer.address", endpoint.ip().to_string());
        span.set("network.peer.port", endpoint.port());
        let scheme = uri.scheme_str().unwrap_or("http");
        let authority = uri.authority().map_or("", |a| a.as_str());
        span.set("url.full", format!("{scheme}://{authority}{}", uri.path()));
    }

    /// Names this attempt as the parent of what the backend does.
    pub fn inject(&self, headers: &mut HeaderMap) {
        if let Some(span) = &self.0 {
            span.inject(headers);
        }
    }

    pub fn answered(&mut self, status: StatusCode) {
        let Some(span) = &mut self.0 else {
            return;
        };
        span.set("http.response.status_code", status.as_u16());
        // A client span fails on any 4xx or 5xx answer.
        if status.is_client_error() || status.is_server_error() {
            span.fail(status.as_str().to_string(), format!("HTTP {status}"));
        }
    }

    /// The attempt got no answer (`kind`: `connect_error`, `timeout`, ...).
    pub fn failed(&mut self, kind: &'static str, why: &'static str) {
        if let Some(span) = &mut self.0 {
            span.fail(kind, why.trim_end());
        }
    }
}
