//! Counting gRPC outcomes by `grpc-status`: an HTTP 200 says little about
//! a gRPC call, whose result travels in the trailers (or in the headers of
//! a trailers-only answer). The response body is watched for its trailers
//! without touching the data frames.

use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use crate::http::body::ProxyBody;
use crate::metrics::RouteMetrics;

/// gRPC's status codes run from 0 (OK) to 16 (UNAUTHENTICATED).
const CODES: usize = 17;

/// Calls by `grpc-status` for one route: one slot per code, and one for
/// calls that ended without a valid status (reset, cut short, or a
/// backend that never sent one).
#[derive(Debug, Default)]
pub struct GrpcStatusCounters {
    codes: [AtomicU64; CODES],
    none: AtomicU64,
}

impl GrpcStatusCounters {
    /// Counts one call ending with `status` (`None`: no valid status).
    pub fn record(&self, status: Option<u8>) {
        let slot = status
            .and_then(|code| self.codes.get(usize::from(code)))
            .unwrap_or(&self.none);
        slot.fetch_add(1, Ordering::Relaxed);
    }

    /// Prometheus lines for `route` (an escaped label value), non-zero
    /// slots only.
    pub fn render(&self, out: &mut String, route: &str) {
        let codes = self
            .codes
            .iter()
            .zip(0u8..)
            .map(|(n, c)| (n, c.to_string()));
        for (counter, label) in codes.chain([(&self.none, "none".to_string())]) {
            let n = counter.load(Ordering::Relaxed);
            if n > 0 {
                let _ = writeln!(
                    out,
                    "coxswain_proxy_grpc_requests_total{{route=\"{route}\",grpc_status=\"{label}\"}} {n}"
                );
            }
        }
    }
}

/// The `grpc-status` in `headers`, when it is a valid code (0 to 16).
pub(crate) fn status_in(headers: &HeaderMap) -> Option<u8> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    let code: u8 = value.parse().ok()?;
    (usize::from(code) < CODES).then_some(code)
}

/// A gRPC call whose response is not on its way yet. Dropped before that
/// (the client reset the stream while the gateway waited for the backend)
/// it counts as a call without a status, under the route that took it.
pub struct PendingCall {
    /// The route that took the call, else the unmatched label's metrics;
    /// taken once the outcome is handed on or recorded.
    route: Option<Arc<RouteMetrics>>,
}

impl PendingCall {
    /// A call no route has taken yet (counted under `unmatched`).
    pub fn new(unmatched: Arc<RouteMetrics>) -> Self {
        PendingCall {
            route: Some(unmatched),
        }
    }

    /// The call was routed: count it under `route`.
    pub fn routed(&mut self, route: &Arc<RouteMetrics>) {
        self.route = Some(route.clone());
    }

    /// Hands the outcome on to `response` (see [`observe`]).
    pub fn respond(mut self, response: Response<ProxyBody>) -> Response<ProxyBody> {
        match self.route.take() {
            Some(route) => observe(response, route),
            None => response,
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(route) = self.route.take() {
            route.grpc().record(None);
        }
    }
}

/// Counts `response`'s gRPC outcome under `route`: now when its headers
/// carry the status (a trailers-only answer), else once its trailers pass
/// or the body ends without them.
pub fn observe(response: Response<ProxyBody>, route: Arc<RouteMetrics>) -> Response<ProxyBody> {
    if let Some(code) = status_in(response.headers()) {
        route.grpc().record(Some(code));
        return response;
    }
    response.map(|inner| {
        WatchTrailers {
            inner,
            route: Some(route),
        }
        .boxed_unsync()
    })
}

/// A response body that records the `grpc-status` of its trailers once.
struct WatchTrailers {
    inner: ProxyBody,
    /// Taken when the outcome is recorded.
    route: Option<Arc<RouteMetrics>>,
}

impl WatchTrailers {
    fn finish(&mut self, status: Option<u8>) {
        if let Some(route) = self.route.take() {
            route.grpc().record(status);
        }
    }
}

impl Body for WatchTrailers {
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
                    let status = status_in(trailers);
                    self.finish(status);
                }
            }
            Poll::Ready(None | Some(Err(_))) => self.finish(None),
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

impl Drop for WatchTrailers {
    /// A body dropped before its end (the client went away) still counts,
    /// as a call without a status.
    fn drop(&mut self) {
        self.finish(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http_body_util::Full;
    use std::collections::VecDeque;

    fn rendered(route: &RouteMetrics) -> String {
        let mut out = String::new();
        route.grpc().render(&mut out, "r");
        out
    }

    fn trailers(status: &'static str) -> HeaderMap {
        let mut t = HeaderMap::new();
        t.insert("grpc-status", HeaderValue::from_static(status));
        t
    }

    /// A body that yields the given frames, one per poll.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = hyper::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    fn streamed(frames: Vec<Frame<Bytes>>) -> ProxyBody {
        Frames(frames.into()).boxed_unsync()
    }

    #[tokio::test]
    async fn the_status_in_the_trailers_is_counted_once() {
        let route = Arc::new(RouteMetrics::default());
        let body = streamed(vec![
            Frame::data(Bytes::from_static(b"\0\0\0\0\0")),
            Frame::trailers(trailers("14")),
        ]);
        let response = observe(Response::new(body), route.clone());
        let collected = response.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
        assert_eq!(
            rendered(&route),
            "coxswain_proxy_grpc_requests_total{route=\"r\",grpc_status=\"14\"} 1\n"
        );
    }

    #[tokio::test]
    async fn a_call_dropped_before_its_response_counts_as_none_on_its_route() {
        let unmatched = Arc::new(RouteMetrics::default());
        let route = Arc::new(RouteMetrics::default());
        let mut call = PendingCall::new(unmatched.clone());
        call.routed(&route);
        drop(call);
        drop(PendingCall::new(unmatched.clone()));
        let none = "coxswain_proxy_grpc_requests_total{route=\"r\",grpc_status=\"none\"} 1\n";
        assert_eq!(rendered(&route), none);
        assert_eq!(rendered(&unmatched), none);
        let answered = PendingCall::new(unmatched.clone());
        let mut response = Response::new(streamed(vec![]));
        *response.headers_mut() = trailers("5");
        drop(answered.respond(response));
        assert!(rendered(&unmatched).contains("grpc_status=\"5\"} 1"));
    }

    #[tokio::test]
    async fn a_trailers_only_answer_counts_at_once() {
        let route = Arc::new(RouteMetrics::default());
        let empty = Full::new(Bytes::new())
            .map_err(|never| match never {})
            .boxed_unsync();
        let mut response = Response::new(empty);
        *response.headers_mut() = trailers("0");
        drop(observe(response, route.clone()));
        assert_eq!(
            rendered(&route),
            "coxswain_proxy_grpc_requests_total{route=\"r\",grpc_status=\"0\"} 1\n"
        );
    }

    #[tokio::test]
    async fn no_trailers_an_invalid_code_or_a_dropped_body_count_as_none() {
        let route = Arc::new(RouteMetrics::default());
        let no_trailers = streamed(vec![Frame::data(Bytes::from_static(b"x"))]);
        let response = observe(Response::new(no_trailers), route.clone());
        response.into_body().collect().await.unwrap();
        let invalid = streamed(vec![Frame::trailers(trailers("17"))]);
        let response = observe(Response::new(invalid), route.clone());
        response.into_body().collect().await.unwrap();
        let cut = streamed(vec![Frame::data(Bytes::from_static(b"x"))]);
        drop(observe(Response::new(cut), route.clone()));
        assert_eq!(
            rendered(&route),
            "coxswain_proxy_grpc_requests_total{route=\"r\",grpc_status=\"none\"} 3\n"
        );
    }
}
