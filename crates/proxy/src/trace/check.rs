//! The client span of one external authorization check
//! (CoxswainExternalAuth): the call to the authorization service, its
//! answer and the decision taken on it.

use std::net::SocketAddr;

use http::{HeaderMap, Method, StatusCode};

use super::scope::{ChildSpan, TraceScope};
use super::server::method_name;

/// The gRPC method an Envoy-style check calls.
const CHECK_SERVICE: &str = "envoy.service.auth.v3.Authorization";

/// Nothing at all when tracing is off.
pub struct CheckSpan<'s>(Option<ChildSpan<'s>>);

impl<'s> CheckSpan<'s> {
    /// No span (tracing off, or a caller outside a request).
    pub fn off() -> Self {
        CheckSpan(None)
    }

    /// A check over gRPC (`Authorization/Check`) or HTTP (forward-auth
    /// with `method`) to `cluster`'s endpoints.
    pub fn start(
        scope: Option<&'s TraceScope>,
        grpc: bool,
        method: &Method,
        cluster: &str,
    ) -> Self {
        CheckSpan(scope.map(|scope| {
            let mut span = if grpc {
                let mut span = scope.child(format!("{CHECK_SERVICE}/Check"));
                span.set("rpc.system", "grpc");
                span.set("rpc.service", CHECK_SERVICE);
                span.set("rpc.method", "Check");
                span
            } else {
                let name = method_name(method);
                let mut span = scope.child(format!("ext_authz {name}"));
                span.set("http.request.method", name);
                span
            };
            span.set("coxswain.ext_authz.cluster", cluster.to_string());
            span
        }))
    }

    /// Names this check as the parent of what the service records.
    pub fn inject(&self, headers: &mut HeaderMap) {
        if let Some(span) = &self.0 {
            span.inject(headers);
        }
    }

    pub fn endpoint(&mut self, endpoint: SocketAddr) {
        if let Some(span) = &mut self.0 {
            span.set("server.address", endpoint.ip().to_string());
            span.set("server.port", endpoint.port());
        }
    }

    /// The service's answer: its HTTP status and, for gRPC, its status code.
    pub fn answered(&mut self, status: StatusCode, grpc_status: Option<i64>) {
        if let Some(span) = &mut self.0 {
            span.set("http.response.status_code", status.as_u16());
            if let Some(code) = grpc_status {
                span.set("rpc.grpc.status_code", code);
            }
        }
    }

    /// What the gateway made of the answer: `allow`, `deny`, or (no
    /// verdict) `error` with what went wrong.
    pub fn decided(&mut self, decision: &'static str, failure: Option<(&'static str, String)>) {
        let Some(span) = &mut self.0 else {
            return;
        };
        span.set("coxswain.ext_authz.decision", decision);
        if let Some((kind, why)) = failure {
            span.fail(kind, why);
        }
    }
}
