//! Lingering close for HTTP/1 connections answered before the client
//! finished its request body (413, 401, 403 on an upload).
//!
//! Closing a socket that still has unread bytes makes the kernel send a
//! RST, and a RST can reach the client before it read the answer, which it
//! then never sees. So when a request asked for it ([`Linger::want`]),
//! shutting the connection down first sends FIN (the answer is complete),
//! then reads and discards what the client still sends until it closes,
//! for at most [`LINGER_FOR`] or [`LINGER_BYTES`].

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The longest a closed connection drains its client's bytes.
pub const LINGER_FOR: Duration = Duration::from_secs(2);
/// The most bytes it discards meanwhile.
pub const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Set by a request whose answer left its body unread.
#[derive(Clone, Debug, Default)]
pub struct Linger(Arc<AtomicBool>);

impl Linger {
    pub fn want(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn wanted(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A connection that lingers on shutdown when its [`Linger`] was set.
pub struct Lingering<I> {
    inner: I,
    linger: Linger,
    draining: Option<Drain>,
}

struct Drain {
    until: Pin<Box<Sleep>>,
    left: usize,
}

impl<I> Lingering<I> {
    pub fn new(inner: I, linger: Linger) -> Self {
        Lingering {
            inner,
            linger,
            draining: None,
        }
    }

    pub fn get_mut(&mut self) -> &mut I {
        &mut self.inner
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Lingering<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.draining.is_none() {
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            if !this.linger.wanted() {
                return Poll::Ready(Ok(()));
            }
            this.draining = Some(Drain {
                until: Box::pin(tokio::time::sleep(LINGER_FOR)),
                left: LINGER_BYTES,
            });
        }
        let Some(drain) = this.draining.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let mut scratch = [0u8; 4096];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                // The client closed (or reset): done.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    drain.left = drain.left.saturating_sub(buf.filled().len());
                    if drain.left == 0 {
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Pending => {
                    ready!(drain.until.as_mut().poll(cx));
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_wanted_linger_sends_fin_then_drains_until_the_client_closes() {
        let (server, mut client) = tokio::io::duplex(64);
        let linger = Linger::default();
        let mut server = Lingering::new(server, linger.clone());
        linger.want();
        server.write_all(b"413").await.unwrap();
        let shutdown = tokio::spawn(async move { server.shutdown().await });
        // The answer arrives whole, then EOF, while the client still sends.
        let mut answer = Vec::new();
        client.write_all(&[b'x'; 1000]).await.unwrap();
        client.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"413");
        drop(client);
        shutdown.await.unwrap().unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_closes_is_left_after_the_linger_time() {
        let (server, _client) = tokio::io::duplex(64);
        let linger = Linger::default();
        linger.want();
        let mut server = Lingering::new(server, linger);
        let started = tokio::time::Instant::now();
        server.shutdown().await.unwrap();
        assert_eq!(started.elapsed(), LINGER_FOR);
    }

    #[tokio::test]
    async fn without_a_request_asking_shutdown_does_not_wait() {
        let (server, _client) = tokio::io::duplex(64);
        let mut server = Lingering::new(server, Linger::default());
        server.shutdown().await.unwrap();
    }
}
