//! JwtAuth (authn phase): the request's bearer token verified against the
//! resource's keys. No token, or one that fails, gets 401 with a `Bearer`
//! challenge; no keys to check with (a remote set not fetched) gets 503 —
//! closed, never open. An admitted request goes on with the claims the
//! resource names in request headers (a client's own headers of those
//! names removed first, so it cannot forge them) and without the token
//! unless the resource forwards it.

use std::time::{SystemTime, UNIX_EPOCH};

use http::header::WWW_AUTHENTICATE;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::Value;

use super::Flow;
use super::context::RequestCtx;
use crate::auth::jwt::CompiledJwtAuth;
use crate::auth::jwt::token;
use crate::http::body::plain;

pub fn admit(jwt: &CompiledJwtAuth, ctx: &mut RequestCtx<'_>) -> Flow {
    let Some(keys) = jwt.keys() else {
        tracing::debug!(issuer = %jwt.auth.issuer, "JwtAuth has no keys yet");
        return Flow::Answer(plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "authentication unavailable\n",
        ));
    };
    let (source, token) = match find_token(jwt, &ctx.parts.headers) {
        Found::Token(source, token) => (source, token),
        Found::Missing => return refuse(jwt, None),
        Found::Invalid(why) => return refuse(jwt, Some(why)),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut verified = match token::verify(token, &keys, &jwt.auth, now, &jwt.seen) {
        Ok(v) => v,
        Err(why) => {
            tracing::debug!(issuer = %jwt.auth.issuer, why, "JwtAuth refused the token");
            return refuse(jwt, Some(why));
        }
    };
    let mut set: Vec<(&HeaderName, HeaderValue)> = jwt
        .claims
        .iter()
        .filter_map(|(claim, header)| Some((header, claim_value(verified.claims.get(claim)?)?)))
        .collect();
    if let Some(header) = &jwt.payload_header
        && let Ok(value) = HeaderValue::from_str(verified.payload)
    {
        set.push((header, value));
    }
    // Kept for the limits phase (a RateLimit keyed on a claim).
    let claims = std::mem::take(&mut verified.claims);
    let headers = &mut ctx.parts.headers;
    for header in jwt.claims.iter().map(|(_, h)| h).chain(&jwt.payload_header) {
        headers.remove(header);
    }
    for (header, value) in set {
        headers.append(header, value);
    }
    if !jwt.auth.forward {
        headers.remove(source);
    }
    ctx.claims = Some(Box::new(claims));
    Flow::Next
}

enum Found<'h> {
    /// The header it was in, and the token.
    Token(HeaderName, &'h str),
    Missing,
    Invalid(&'static str),
}

/// The token of the first configured header that holds one (its prefix
/// compared without regard to case, as auth schemes are).
fn find_token<'h>(jwt: &CompiledJwtAuth, headers: &'h HeaderMap) -> Found<'h> {
    for (name, prefix) in &jwt.from {
        let mut values = headers.get_all(name).iter();
        let Some(value) = values.next() else {
            continue;
        };
        if values.next().is_some() {
            // Which one would the upstream read?
            return Found::Invalid("more than one token header");
        }
        let Ok(value) = value.to_str() else {
            return Found::Invalid("malformed token");
        };
        let Some(rest) = value
            .get(..prefix.len())
            .filter(|p| p.eq_ignore_ascii_case(prefix))
            .and_then(|_| value.get(prefix.len()..))
        else {
            continue;
        };
        let token = rest.trim();
        if token.is_empty() {
            return Found::Missing;
        }
        return Found::Token(name.clone(), token);
    }
    Found::Missing
}

/// A claim as a header value: strings as they are, numbers and booleans
/// as JSON writes them; anything else (objects, arrays, null) is not
/// copied.
fn claim_value(value: &Value) -> Option<HeaderValue> {
    match value {
        Value::String(s) => HeaderValue::from_str(s).ok(),
        Value::Number(n) => HeaderValue::from_str(&n.to_string()).ok(),
        Value::Bool(b) => Some(HeaderValue::from_static(if *b { "true" } else { "false" })),
        _ => None,
    }
}

fn refuse(jwt: &CompiledJwtAuth, invalid: Option<&str>) -> Flow {
    let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized\n");
    if let Some(challenge) = jwt.challenge(invalid) {
        response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    }
    Flow::Answer(response)
}
