//! RequestRedirect (transforms): the gateway answers with `Location`; no
//! backend is contacted.

use coxswain_ir::Redirect;
use http::header::LOCATION;
use http::{HeaderValue, StatusCode};

use super::Flow;
use super::context::RequestCtx;
use crate::http::body::plain;
use crate::http::redirect::{RedirectInput, location};

pub fn answer(r: &Redirect, ctx: &RequestCtx<'_>) -> Flow {
    let input = RedirectInput {
        host: &ctx.host,
        path: &ctx.path,
        query: ctx.query.as_deref(),
        listener_port: ctx.listener_port,
        scheme: ctx.scheme,
    };
    let status = StatusCode::from_u16(r.status_code)
        .ok()
        .filter(StatusCode::is_redirection)
        .unwrap_or(StatusCode::FOUND);
    Flow::Answer(
        match HeaderValue::from_str(&location(r, &input, ctx.matched)) {
            Ok(value) => {
                let mut response = plain(status, "redirecting\n");
                response.headers_mut().insert(LOCATION, value);
                response
            }
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "invalid redirect\n"),
        },
    )
}
