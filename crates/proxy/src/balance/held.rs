//! A response body that keeps its upstream attempt alive until the body
//! ends or is dropped, so least_conn counts a streaming response (or a
//! long download) as in flight for as long as it really is.

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};

use crate::balance::Attempt;

pub struct HeldBody<B> {
    inner: B,
    attempt: Option<Attempt>,
}

impl<B> HeldBody<B> {
    pub fn new(inner: B, attempt: Attempt) -> Self {
        HeldBody {
            inner,
            attempt: Some(attempt),
        }
    }
}

impl<B: Body + Unpin> Body for HeldBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.attempt = None;
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
