//! URLRewrite (transforms): what the upstream sees instead of the client's
//! host and path. The original host goes along in `X-Forwarded-Host`
//! (see the forwarding step in [`super::hygiene`]).

use coxswain_ir::Rewrite;

use super::Flow;
use super::context::RequestCtx;
use crate::http::path::apply_modifier;

pub fn apply(rewrite: &Rewrite, ctx: &mut RequestCtx<'_>) -> Flow {
    if let Some(host) = &rewrite.hostname {
        ctx.new_host = Some(host.clone());
    }
    if let Some(modifier) = &rewrite.path
        && let Some(path) = apply_modifier(modifier, &ctx.path, ctx.matched)
    {
        ctx.new_path = Some(path);
    }
    Flow::Next
}
