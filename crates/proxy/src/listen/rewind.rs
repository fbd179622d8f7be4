//! A connection whose first bytes were already read (to look at the
//! ClientHello) and are served again before the rest of the stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Rewind<T> {
    prefix: Bytes,
    inner: T,
}

impl<T> Rewind<T> {
    pub fn new(prefix: Bytes, inner: T) -> Self {
        Rewind { prefix, inner }
    }

    /// Bytes are waiting to be replayed.
    pub fn has_prefix(&self) -> bool {
        !self.prefix.is_empty()
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }

    /// Puts `bytes` back in front of whatever is still to be replayed.
    /// Copied: they are usually a few bytes left in a buffer of kilobytes,
    /// which sharing would keep alive.
    pub fn unread(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.prefix = [bytes, &self.prefix[..]].concat().into();
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            let chunk = self.prefix.split_to(n);
            buf.put_slice(&chunk);
            if self.prefix.is_empty() {
                // An emptied `Bytes` still holds the buffer it came from
                // (a KiB or more): let it go, or every connection keeps it
                // for its whole life.
                self.prefix = Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewind<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn replays_the_prefix_then_reads_on() {
        let inner = std::io::Cursor::new(b" world".to_vec());
        let mut io = Rewind::new(Bytes::from_static(b"hello"), inner);
        let mut out = String::new();
        io.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "hello world");
    }

    #[tokio::test]
    async fn unread_bytes_come_first() {
        let inner = std::io::Cursor::new(b"!".to_vec());
        let mut io = Rewind::new(Bytes::from_static(b"world"), inner);
        io.unread(b"");
        io.unread(b"hello ");
        let mut out = String::new();
        io.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "hello world!");
    }

    #[tokio::test]
    async fn a_replayed_prefix_lets_go_of_its_buffer() {
        // The buffer the first bytes were read into (with room to spare).
        let mut read = bytes::BytesMut::with_capacity(1024);
        read.extend_from_slice(b"GET / HTTP/1.1\r\n");
        let original = read.freeze();
        let inner = std::io::Cursor::new(b"rest".to_vec());
        let mut io = Rewind::new(original.clone(), inner);
        let mut first = vec![0; original.len()];
        io.read_exact(&mut first).await.unwrap();
        assert_eq!(first, original);
        // Still connected, prefix replayed: only the test holds the buffer.
        assert!(original.is_unique());
    }
}
