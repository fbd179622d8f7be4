//! RequestSizeLimit (limits phase): a body whose `Content-Length` is past
//! the limit is answered 413 before any of it is read; any other body is
//! counted on its way upstream and cut off where it passes the limit
//! ([`crate::http::body::ClientBody`]), which answers 413 too.

use http::StatusCode;
use http::header::CONTENT_LENGTH;

use super::Flow;
use super::context::RequestCtx;
use crate::http::body::plain;

pub fn admit(max_bytes: u64, ctx: &mut RequestCtx<'_>) -> Flow {
    let declared = ctx
        .parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_bytes) {
        tracing::debug!(max_bytes, "request body larger than the limit");
        return Flow::Answer(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large\n",
        ));
    }
    ctx.body_limit = Some(ctx.body_limit.map_or(max_bytes, |l| l.min(max_bytes)));
    Flow::Next
}
