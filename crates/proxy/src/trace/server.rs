//! The server span of one request: started when the request arrives
//! (continuing the client's trace or starting one), given the route's
//! attributes once a route took it, ended when the response body ends
//! (with its gRPC status, when there is one).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, Version};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use super::Tracer;
use super::context;
use super::scope::TraceScope;
use super::span::{Recorder, SpanKind};
use crate::http::body::ProxyBody;
use crate::http::grpc::is_grpc;

/// Where the request came in: what the server span says about the
/// connection.
pub struct Arrival {
    pub scheme: &'static str,
    pub listener: SocketAddr,
    pub client: SocketAddr,
}

/// The route that took a request, as its span names it.
pub struct RouteInfo<'a> {
    pub kind: &'static str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The rule's name, else its index.
    pub rule: Cow<'a, str>,
    /// `namespace/name` of the Gateway, and the listener's name.
    pub gateway: &'a str,
    pub listener: &'a str,
    /// The path the rule matched on (`http.route`), when it is a fixed
    /// one (exact or prefix).
    pub http_route: Option<&'a str>,
}

pub struct ServerSpan {
    scope: TraceScope,
    method: Method,
    grpc: bool,
    /// `None` when the trace is not recorded.
    recorder: Option<Recorder>,
}

impl ServerSpan {
    /// Starts the span for `req` and rewrites its trace headers to name
    /// this span as the parent of what the gateway sends on.
    pub fn start<B>(tracer: &Tracer, req: &mut Request<B>, at: &Arrival) -> Box<ServerSpan> {
        let headers = req.headers_mut();
        let parent = context::extract(headers);
        // A `tracestate` belongs to its `traceparent`: gone with a bad one.
        let tracestate = parent.and_then(|_| context::tracestate(headers));
        let trace_id = parent.map_or_else(super::trace_id, |p| p.trace_id);
        let span_id = super::span_id();
        let sampled = tracer
            .inner
            .sampler
            .sample(&trace_id, parent.map(|p| p.sampled()));
        let scope = TraceScope {
            tracer: tracer.clone(),
            trace_id,
            span_id,
            sampled,
            tracestate,
        };
        scope.inject(&span_id, headers);
        let grpc = is_grpc(headers);
        let recorder = sampled.then(|| {
            let name = match grpc.then(|| rpc_name(req.uri().path())).flatten() {
                Some((service, method)) => Cow::Owned(format!("{service}/{method}")),
                None => Cow::Borrowed(method_name(req.method())),
            };
            let mut r = Recorder::start(
                (trace_id, span_id),
                parent.map(|p| p.span_id),
                name,
                SpanKind::Server,
            );
            r.data.remote_parent = parent.is_some();
            r.data.trace_state = scope.tracestate.clone();
            request_attributes(&mut r, req, at, grpc);
            r
        });
        Box::new(ServerSpan {
            scope,
            method: req.method().clone(),
            grpc,
            recorder,
        })
    }

    pub fn scope(&self) -> &TraceScope {
        &self.scope
    }

    /// The route that took the request.
    pub fn routed(&mut self, route: &RouteInfo<'_>) {
        let Some(r) = &mut self.recorder else {
            return;
        };
        r.set("coxswain.route.kind", route.kind);
        r.set("coxswain.route.namespace", route.namespace.to_string());
        r.set("coxswain.route.name", route.name.to_string());
        r.set("coxswain.route.rule", route.rule.to_string());
        r.set("coxswain.gateway", route.gateway.to_string());
        r.set("coxswain.listener", route.listener.to_string());
        if let Some(path) = route.http_route {
            r.set("http.route", path.to_string());
            if !self.grpc {
                r.data.name = Cow::Owned(format!("{} {path}", method_name(&self.method)));
            }
        }
    }

    /// Records the response status and ends the span when the response's
    /// body ends.
    pub fn respond(mut self: Box<Self>, response: Response<ProxyBody>) -> Response<ProxyBody> {
        let Some(r) = &mut self.recorder else {
            return response;
        };
        let status = response.status();
        r.set("http.response.status_code", status.as_u16());
        if status.is_server_error() {
            r.set("error.type", status.as_str().to_string());
            r.fail(Cow::Owned(format!("HTTP {status}")));
        }
        if self.grpc
            && let Some(code) = grpc_status(response.headers())
        {
            self.grpc_outcome(Some(code));
            return response;
        }
        response.map(|inner| TracedBody { inner, span: self }.boxed_unsync())
    }

    /// Records a gRPC call's status (`None`: it ended without one).
    fn grpc_outcome(&mut self, code: Option<u8>) {
        self.grpc = false;
        let Some(r) = &mut self.recorder else {
            return;
        };
        match code {
            Some(code) => {
                r.set("rpc.grpc.status_code", i64::from(code));
                // The codes the RPC conventions count as a server's failure.
                if matches!(code, 2 | 4 | 12 | 13 | 14 | 15) {
                    r.set("error.type", i64::from(code).to_string());
                    r.fail(Cow::Owned(format!("grpc-status {code}")));
                }
            }
            None => {
                r.set("error.type", "no_grpc_status");
                r.fail("the call ended without a grpc-status");
            }
        }
    }
}

impl Drop for ServerSpan {
    /// A request dropped before its answer was sent (the client went
    /// away) still ends its span.
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.take() {
            self.scope.tracer.record(recorder.end());
        }
    }
}

/// The response body, ending its request's span when it ends.
struct TracedBody {
    inner: ProxyBody,
    span: Box<ServerSpan>,
}

impl TracedBody {
    fn end(&mut self, trailers: Option<&HeaderMap>, failed: bool) {
        if self.span.grpc {
            self.span.grpc_outcome(trailers.and_then(grpc_status));
        }
        if let Some(mut r) = self.span.recorder.take() {
            if failed {
                r.set("error.type", "response_body");
                r.fail("the response body failed");
            }
            self.span.scope.tracer.record(r.end());
        }
    }
}

impl Body for TracedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    self.end(Some(trailers), false);
                } else if self.inner.is_end_stream() {
                    self.end(None, false);
                }
            }
            Poll::Ready(Some(Err(_))) => self.end(None, true),
            Poll::Ready(None) => self.end(None, false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TracedBody {
    /// Dropped unfinished: the client went away mid-body.
    fn drop(&mut self) {
        let unfinished = !self.inner.is_end_stream();
        if unfinished && let Some(r) = &mut self.span.recorder {
            r.set("coxswain.response.incomplete", true);
        }
        self.end(None, false);
    }
}

fn request_attributes<B>(r: &mut Recorder, req: &Request<B>, at: &Arrival, grpc: bool) {
    let method = req.method();
    let name = method_name(method);
    r.set("http.request.method", name);
    if name == "_OTHER" {
        r.set("http.request.method_original", method.as_str().to_string());
    }
    r.set("url.scheme", at.scheme);
    r.set("url.path", req.uri().path().to_string());
    r.set(
        "server.address",
        host_only(crate::handler::request_host(req)).to_string(),
    );
    r.set("server.port", at.listener.port());
    r.set("client.address", at.client.ip().to_string());
    r.set("network.peer.address", at.client.ip().to_string());
    r.set("network.peer.port", at.client.port());
    r.set("network.protocol.version", protocol_version(req.version()));
    if let Some(agent) = req
        .headers()
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
    {
        r.set("user_agent.original", agent.to_string());
    }
    if grpc {
        r.set("rpc.system", "grpc");
        if let Some((service, method)) = rpc_name(req.uri().path()) {
            r.set("rpc.service", service.to_string());
            r.set("rpc.method", method.to_string());
        }
    }
}

/// The method as the HTTP conventions name it: the nine of RFC 9110 and
/// PATCH, anything else `_OTHER`.
pub fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::PATCH => "PATCH",
        _ => "_OTHER",
    }
}

pub fn protocol_version(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

/// `/pkg.Service/Method` as (`pkg.Service`, `Method`).
pub fn rpc_name(path: &str) -> Option<(&str, &str)> {
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    (!service.is_empty() && !method.is_empty() && !method.contains('/'))
        .then_some((service, method))
}

/// `host` without a port.
fn host_only(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn grpc_status(headers: &HeaderMap) -> Option<u8> {
    let code: u8 = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    (code <= 16).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions() {
        assert_eq!(method_name(&Method::GET), "GET");
        assert_eq!(
            method_name(&Method::from_bytes(b"PURGE").unwrap()),
            "_OTHER"
        );
        assert_eq!(
            rpc_name("/grpc.testing.TestService/EmptyCall"),
            Some(("grpc.testing.TestService", "EmptyCall"))
        );
        assert_eq!(rpc_name("/a/b/c"), None);
        assert_eq!(host_only("example.com:8080"), "example.com");
        assert_eq!(host_only("[::1]:80"), "::1");
        assert_eq!(host_only("example.com"), "example.com");
    }
}
