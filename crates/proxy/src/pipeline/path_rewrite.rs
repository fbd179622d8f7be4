//! PathRewriteRegex (transforms): every match of the pattern in the path
//! (as an earlier URLRewrite left it) becomes the substitution. A result
//! without a leading `/` gets one, so the upstream is always asked for an
//! absolute path.

use regex::Regex;

use super::Flow;
use super::context::RequestCtx;

pub fn apply(regex: &Regex, substitution: &str, ctx: &mut RequestCtx<'_>) -> Flow {
    let current = ctx.new_path.as_deref().unwrap_or(&ctx.path);
    let rewritten = regex.replace_all(current, substitution);
    ctx.new_path = Some(if rewritten.starts_with('/') {
        rewritten.into_owned()
    } else {
        format!("/{rewritten}")
    });
    Flow::Next
}
