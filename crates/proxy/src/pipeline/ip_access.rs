//! IpAccessControl (network phase): a client outside the resource's ranges
//! is refused with 403 before anything else looks at its request. The
//! client is the connection's peer, or the `X-Forwarded-For` entry the
//! resource trusts; a request whose trusted entry is missing or not an
//! address cannot be judged and is refused too.

use http::StatusCode;

use super::Flow;
use super::context::RequestCtx;
use crate::http::body::plain;
use crate::http::headers::X_FORWARDED_FOR;
use coxswain_ir::IpAccess;

pub fn admit(access: &IpAccess, ctx: &RequestCtx<'_>) -> Flow {
    let forwarded = ctx
        .parts
        .headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok());
    match access.client(ctx.client, forwarded) {
        Some(client) if access.admits(client) => Flow::Next,
        client => {
            tracing::debug!(peer = %ctx.client, ?client, "refused by IpAccessControl");
            Flow::Answer(plain(StatusCode::FORBIDDEN, "forbidden\n"))
        }
    }
}
