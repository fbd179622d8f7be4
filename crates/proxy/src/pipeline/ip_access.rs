//! IpAccessControl (network phase): a client outside the resource's ranges
//! is refused with 403 before anything else looks at its request.

use http::StatusCode;

use super::Flow;
use super::context::RequestCtx;
use crate::http::body::plain;
use coxswain_ir::IpAccess;

pub fn admit(access: &IpAccess, ctx: &RequestCtx<'_>) -> Flow {
    if access.admits(ctx.client) {
        Flow::Next
    } else {
        tracing::debug!(client = %ctx.client, "refused by IpAccessControl");
        Flow::Answer(plain(StatusCode::FORBIDDEN, "forbidden\n"))
    }
}
