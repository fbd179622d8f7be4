//! How long an upstream request spent opening its connection (the access
//! log's `upstream_connect_ms`). Every new upstream connection notes when
//! it started and how long it took, and its responses carry that in their
//! extensions; a request sent before its connection started waited for
//! that connection, one sent after reused it and spent nothing connecting.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Response, Uri};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// When one upstream connection started, and how long it took to be
/// usable (TCP, and TLS when there is TLS).
#[derive(Clone, Copy, Debug)]
pub struct ConnectTiming {
    pub started: Instant,
    pub took: Duration,
}

impl ConnectTiming {
    /// A connection that started at `started` and is usable now.
    pub fn since(started: Instant) -> Self {
        ConnectTiming {
            started,
            took: started.elapsed(),
        }
    }

    /// What the request sent at `sent` spent connecting, by its response.
    pub fn spent<B>(response: &Response<B>, sent: Instant) -> Duration {
        match response.extensions().get::<ConnectTiming>() {
            Some(t) if t.started >= sent => t.took,
            _ => Duration::ZERO,
        }
    }
}

/// A connection that knows its [`ConnectTiming`], for the pooled clients.
pub struct Timed<T> {
    io: T,
    timing: ConnectTiming,
}

impl<T> Timed<T> {
    pub fn new(io: T, timing: ConnectTiming) -> Self {
        Timed { io, timing }
    }
}

impl<T: Connection> Connection for Timed<T> {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.timing)
    }
}

impl<T: Read + Unpin> Read for Timed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Timed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

type ConnectError = Box<dyn std::error::Error + Send + Sync>;

/// The plain HTTP/1.1 connector, timed.
#[derive(Clone)]
pub struct TimedHttpConnector(pub HttpConnector);

impl tower_service::Service<Uri> for TimedHttpConnector {
    type Response = Timed<TokioIo<TcpStream>>;
    type Error = ConnectError;
    // Boxed: connecting is rare next to requests.
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, ConnectError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let started = Instant::now();
        let connecting = self.0.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(Timed::new(io, ConnectTiming::since(started)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_request_sent_before_its_connection_started_spent_its_connect_time() {
        let sent = Instant::now();
        tokio::time::advance(Duration::from_millis(1)).await;
        let timing = ConnectTiming {
            started: Instant::now(),
            took: Duration::from_millis(7),
        };
        let mut fresh = Response::new(());
        fresh.extensions_mut().insert(timing);
        assert_eq!(ConnectTiming::spent(&fresh, sent), Duration::from_millis(7));
        tokio::time::advance(Duration::from_millis(1)).await;
        let reused_by = Instant::now();
        assert_eq!(ConnectTiming::spent(&fresh, reused_by), Duration::ZERO);
        assert_eq!(
            ConnectTiming::spent(&Response::new(()), sent),
            Duration::ZERO
        );
    }
}
