//! The CORS stage (admission): a preflight is answered by the gateway
//! before any credential is asked for; an allowed origin's other requests
//! go on with their CORS response headers planned.

use super::Flow;
use super::context::RequestCtx;
use crate::http::cors::CorsPolicy;

pub fn admit(policy: &CorsPolicy, ctx: &mut RequestCtx<'_>) -> Flow {
    if CorsPolicy::is_preflight(&ctx.parts.method, &ctx.parts.headers) {
        return Flow::Answer(policy.preflight(&ctx.parts.headers));
    }
    ctx.plan.cors = policy.response_headers(&ctx.parts.headers);
    Flow::Next
}
