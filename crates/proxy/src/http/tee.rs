//! Copies of a request body for mirrors. Each frame the client's body
//! yields is offered to every copy; a copy whose mirror falls more than
//! [`MAX_LAG`] bytes behind is cut off (its body ends in an error, so the
//! mirror request is aborted rather than sent short), and the client's
//! request never waits for a mirror.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::{Notify, mpsc};

use crate::http::body::BodyError;

/// Bytes a mirror may lag behind the request it copies: what a copy may
/// hold in memory.
pub const MAX_LAG: usize = 1024 * 1024;

/// The sending half, kept by the client's body.
pub struct Copier {
    frames: mpsc::UnboundedSender<Frame<Bytes>>,
    /// Bytes sent and not yet taken by the mirror.
    queued: Arc<AtomicUsize>,
    complete: Arc<AtomicBool>,
    cut: Arc<Notify>,
}

impl Drop for Copier {
    /// A copy let go before the body ended was cut off: say so at once,
    /// so its mirror request is aborted instead of waiting on a body that
    /// will never come.
    fn drop(&mut self) {
        if !self.complete.load(Ordering::SeqCst) {
            self.cut.notify_one();
        }
    }
}

/// Fires when a copy is cut off.
pub struct CutSignal(Arc<Notify>);

impl CutSignal {
    pub async fn wait(&self) {
        self.0.notified().await;
    }
}

/// The receiving half: a mirror request's body.
pub struct CopyReceiver {
    frames: mpsc::UnboundedReceiver<Frame<Bytes>>,
    queued: Arc<AtomicUsize>,
    complete: Arc<AtomicBool>,
    hint: SizeHint,
}

/// A copy that did not get the whole body: the mirror fell behind, or the
/// client's body failed.
#[derive(Debug)]
pub struct CopyCut;

impl fmt::Display for CopyCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the mirrored request body was not copied whole")
    }
}

impl std::error::Error for CopyCut {}

/// A new copy of a body whose size is `hint`.
pub fn channel(hint: SizeHint) -> (Copier, CopyReceiver, CutSignal) {
    let (tx, rx) = mpsc::unbounded_channel();
    let complete = Arc::new(AtomicBool::new(false));
    let queued = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(Notify::new());
    let copier = Copier {
        frames: tx,
        queued: queued.clone(),
        complete: complete.clone(),
        cut: cut.clone(),
    };
    let receiver = CopyReceiver {
        frames: rx,
        queued,
        complete,
        hint,
    };
    (copier, receiver, CutSignal(cut))
}

/// Offers `frame` to every copy; a copy that is too far behind or gone
/// is dropped.
pub fn offer(copies: &mut Vec<Copier>, frame: &Frame<Bytes>) {
    if copies.is_empty() {
        return;
    }
    let len = frame.data_ref().map_or(0, Bytes::len);
    let copy = || {
        frame
            .data_ref()
            .map(|data| Frame::data(data.clone()))
            .or_else(|| frame.trailers_ref().map(|t| Frame::trailers(t.clone())))
    };
    copies.retain(|c| {
        let Some(frame) = copy() else { return true };
        let behind = c.queued.fetch_add(len, Ordering::AcqRel) + len;
        behind <= MAX_LAG && c.frames.send(frame).is_ok()
    });
}

/// The body ended cleanly: every copy still attached ends cleanly too.
pub fn finish(copies: &mut Vec<Copier>) {
    for copier in copies.drain(..) {
        copier.complete.store(true, Ordering::SeqCst);
    }
}

impl CopyReceiver {
    pub fn poll_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.frames.poll_recv(cx) {
            Poll::Ready(Some(frame)) => {
                let len = frame.data_ref().map_or(0, Bytes::len);
                self.queued.fetch_sub(len, Ordering::AcqRel);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) if self.complete.load(Ordering::SeqCst) => Poll::Ready(None),
            Poll::Ready(None) => Poll::Ready(Some(Err(Box::new(CopyCut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    pub fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use super::*;

    async fn next(r: &mut CopyReceiver) -> Option<Result<Frame<Bytes>, BodyError>> {
        poll_fn(|cx| r.poll_frame(cx)).await
    }

    fn data(frame: Frame<Bytes>) -> Bytes {
        frame.into_data().unwrap_or_default()
    }

    #[tokio::test]
    async fn a_copy_sees_every_frame_then_a_clean_end() {
        let (copier, mut receiver, _) = channel(SizeHint::with_exact(6));
        let mut copies = vec![copier];
        offer(&mut copies, &Frame::data(Bytes::from_static(b"abc")));
        offer(&mut copies, &Frame::data(Bytes::from_static(b"def")));
        finish(&mut copies);
        assert_eq!(data(next(&mut receiver).await.unwrap().unwrap()), "abc");
        assert_eq!(data(next(&mut receiver).await.unwrap().unwrap()), "def");
        assert!(next(&mut receiver).await.is_none());
        assert_eq!(receiver.size_hint().exact(), Some(6));
    }

    #[tokio::test]
    async fn a_copy_that_falls_behind_is_cut_off_with_an_error() {
        let (copier, mut receiver, cut) = channel(SizeHint::default());
        let mut copies = vec![copier];
        let chunk = Bytes::from(vec![0u8; MAX_LAG / 4]);
        for _ in 0..4 {
            offer(&mut copies, &Frame::data(chunk.clone()));
        }
        assert_eq!(copies.len(), 1, "within the window");
        assert!(next(&mut receiver).await.unwrap().is_ok());
        offer(&mut copies, &Frame::data(chunk.clone()));
        assert_eq!(copies.len(), 1, "taking a frame made room for one");
        offer(&mut copies, &Frame::data(Bytes::from_static(b"x")));
        assert!(copies.is_empty(), "one byte too many: cut off");
        cut.wait().await; // signalled (a stored permit: no lost wake-up)
        finish(&mut copies);
        for _ in 0..4 {
            assert!(next(&mut receiver).await.unwrap().is_ok());
        }
        let end = next(&mut receiver).await.unwrap();
        assert!(end.unwrap_err().is::<CopyCut>());
    }

    #[tokio::test]
    async fn a_failed_client_body_fails_its_copies() {
        let (copier, mut receiver, cut) = channel(SizeHint::default());
        drop(vec![copier]); // what the client body does on an error
        assert!(next(&mut receiver).await.unwrap().is_err());
        cut.wait().await;
    }

    #[tokio::test]
    async fn trailers_are_copied_and_a_gone_mirror_is_dropped() {
        let (copier, mut receiver, _) = channel(SizeHint::default());
        let (gone, gone_receiver, _) = channel(SizeHint::default());
        drop(gone_receiver);
        let mut copies = vec![copier, gone];
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        offer(&mut copies, &Frame::trailers(trailers));
        assert_eq!(copies.len(), 1);
        let frame = next(&mut receiver).await.unwrap().unwrap();
        assert_eq!(frame.trailers_ref().unwrap()["grpc-status"], "0");
    }
}
