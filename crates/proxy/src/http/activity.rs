//! What a connection's driver knows of its requests: how many are in
//! flight (until hyper is done with the response body), when the last one
//! ended, whether the client expects the connection kept open, and whether
//! hyper's last write had to wait. One [`ConnService`] per connection
//! counts them.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::CONNECTION;
use http::{HeaderMap, HeaderValue, Request, Response, Version};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Instant;

use super::body::ProxyBody;
use super::headers::lists_token;
use crate::handler::{ConnInfo, Shared, SharedTable, handle};

/// Requests in flight on one connection, and when one last started or ended.
pub struct Activity {
    start: Instant,
    active: AtomicUsize,
    last_ms: AtomicU64,
    served: AtomicU64,
    /// The last request and its answer leave the connection open.
    keeps_alive: AtomicBool,
    /// hyper's last write or flush could not finish yet.
    write_blocked: AtomicBool,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Activity {
            start: Instant::now(),
            active: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
            served: AtomicU64::new(0),
            keeps_alive: AtomicBool::new(true),
            write_blocked: AtomicBool::new(false),
        })
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn begin(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    fn end(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }

    /// When the connection became idle (no request in flight, every
    /// response body done), if it is.
    pub fn idle_since(&self) -> Option<Instant> {
        (self.active.load(Ordering::Relaxed) == 0)
            .then(|| self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }

    /// Requests answered on the connection so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// The last exchange left the connection open for another request.
    pub fn keeps_alive(&self) -> bool {
        self.keeps_alive.load(Ordering::Relaxed)
    }

    pub fn write_blocked(&self) -> bool {
        self.write_blocked.load(Ordering::Relaxed)
    }

    pub fn set_write_blocked(&self, blocked: bool) {
        self.write_blocked.store(blocked, Ordering::Relaxed);
    }
}

/// The hyper service of one connection: each request is handled, counted
/// in flight until its response body is done, and the connection's last
/// answer says `Connection: close` once it served its maximum.
#[derive(Clone)]
pub struct ConnService {
    pub shared: Arc<Shared>,
    pub table: SharedTable,
    pub info: ConnInfo,
    pub activity: Arc<Activity>,
}

type Handled = Pin<Box<dyn Future<Output = Result<Response<Tracked>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Tracked>;
    type Error = Infallible;
    // Boxed: an HTTP/1 connection keeps room for its request's future
    // inline while it sits idle between requests; one allocation per
    // request is cheaper than kilobytes per idle connection.
    type Future = Handled;

    fn call(&self, req: Request<Incoming>) -> Handled {
        // Counted from the call, not the first poll: the driver must never
        // see a request hyper already took as idle time.
        let activity = self.activity.clone();
        activity.begin();
        let asks_close = req.version() != Version::HTTP_11 || lists_close(req.headers());
        let (shared, table, info) = (self.shared.clone(), self.table.clone(), self.info.clone());
        Box::pin(async move {
            let max_requests = shared.limits.max_requests_per_connection;
            let Ok(mut response) = handle(shared, table, info, req).await;
            let served = activity.served.fetch_add(1, Ordering::Relaxed) + 1;
            let last = max_requests > 0 && served >= max_requests;
            if last {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            activity
                .keeps_alive
                .store(!asks_close && !last, Ordering::Relaxed);
            Ok(response.map(|inner| Tracked { inner, activity }))
        })
    }
}

/// `Connection: close` among the request's connection options.
fn lists_close(headers: &HeaderMap) -> bool {
    lists_token(headers, CONNECTION, "close")
}

/// A response body that ends its request's time in flight when hyper
/// drops it (sent whole, or abandoned).
pub struct Tracked {
    inner: ProxyBody,
    activity: Arc<Activity>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.activity.end();
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn close_is_found_among_connection_options() {
        let mut headers = HeaderMap::new();
        assert!(!lists_close(&headers));
        headers.append(CONNECTION, HeaderValue::from_static("keep-alive, Upgrade"));
        assert!(!lists_close(&headers));
        headers.append(CONNECTION, HeaderValue::from_static("x-a, CLOSE"));
        assert!(lists_close(&headers));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_idle_only_once_every_body_is_done() {
        let activity = Activity::new();
        assert!(activity.idle_since().is_some(), "a fresh connection");
        activity.begin();
        let body = Tracked {
            inner: http_body_util::Empty::<Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync(),
            activity: activity.clone(),
        };
        assert!(activity.idle_since().is_none(), "its answer is still sent");
        tokio::time::advance(Duration::from_secs(3)).await;
        drop(body);
        let since = activity
            .idle_since()
            .expect("idle once the body is dropped");
        assert_eq!(since.elapsed(), Duration::ZERO);
    }
}
