//! The request body while the stages run: unread, unless a stage needs
//! it whole (a CoxswainExternalAuth that forwards it), in which case it is
//! read once, up to that stage's cap, and the upstream later gets the
//! bytes read. A larger body is never sent on in part: it is refused.

use bytes::{Bytes, BytesMut};
use http_body::Body as _;
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The body as the stages have left it.
pub enum RequestBody {
    Unread(Incoming),
    /// Read to its end.
    Whole(Bytes),
    /// Read in part: it is larger than the cap it was read with.
    TooLarge {
        rest: Incoming,
    },
    /// The client broke its framing while it was read.
    Broken,
}

/// Why the body a stage asked for is not there.
#[derive(Debug, PartialEq, Eq)]
pub enum Unavailable {
    TooLarge,
    Broken,
}

impl RequestBody {
    /// Whether the client has sent all of it (an HTTP/1 answer given
    /// before then closes the connection).
    pub fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Unread(b) | RequestBody::TooLarge { rest: b } => b.is_end_stream(),
            RequestBody::Whole(_) => true,
            RequestBody::Broken => false,
        }
    }

    /// The whole body, if it is at most `cap` bytes; read now if it has
    /// not been.
    pub async fn whole(&mut self, cap: u64) -> Result<&Bytes, Unavailable> {
        if let RequestBody::Unread(_) = self {
            let RequestBody::Unread(incoming) = std::mem::replace(self, RequestBody::Broken) else {
                return Err(Unavailable::Broken);
            };
            *self = read(incoming, cap).await;
        }
        match self {
            RequestBody::Whole(bytes) if bytes.len() as u64 <= cap => Ok(bytes),
            RequestBody::Whole(_) => Err(Unavailable::TooLarge),
            // Read with a smaller cap than this one: this stage cannot
            // have it either, nor could the upstream.
            RequestBody::TooLarge { .. } => Err(Unavailable::TooLarge),
            RequestBody::Broken | RequestBody::Unread(_) => Err(Unavailable::Broken),
        }
    }
}

async fn read(mut incoming: Incoming, cap: u64) -> RequestBody {
    let mut buffer = BytesMut::new();
    while let Some(frame) = incoming.frame().await {
        let Ok(frame) = frame else {
            return RequestBody::Broken;
        };
        // Trailers are not kept: a body a check reads goes on without them.
        if let Ok(data) = frame.into_data() {
            buffer.extend_from_slice(&data);
            if buffer.len() as u64 > cap {
                return RequestBody::TooLarge { rest: incoming };
            }
        }
    }
    RequestBody::Whole(buffer.freeze())
}
