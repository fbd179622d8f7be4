//! BasicAuth (authn phase): `Authorization: Basic` credentials checked
//! against the resource's htpasswd users. Missing or wrong credentials get
//! 401 with a `WWW-Authenticate` challenge; valid ones go on, without the
//! `Authorization` header unless the resource forwards it. A bcrypt check
//! runs on a blocking thread, never on the worker serving other requests.

use base64::Engine;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, StatusCode};

use super::Flow;
use super::context::RequestCtx;
use crate::auth::password::UserTable;
use crate::http::body::plain;

pub async fn admit(table: &UserTable, ctx: &mut RequestCtx<'_>) -> Flow {
    let Some((user, password)) = credentials(ctx) else {
        return challenge(table);
    };
    let verified = table.remembered(&user, &password) || {
        let check = table.check(&user, &password);
        let ok = if check.is_slow() {
            tokio::task::spawn_blocking(move || check.verify())
                .await
                .unwrap_or(false)
        } else {
            check.verify()
        };
        if ok {
            table.remember(&user, &password);
        }
        ok
    };
    if !verified {
        tracing::debug!(%user, "BasicAuth refused the credentials");
        return challenge(table);
    }
    if !table.auth.forward_credentials {
        ctx.parts.headers.remove(AUTHORIZATION);
    }
    Flow::Next
}

/// The user and password of an `Authorization: Basic` header.
fn credentials(ctx: &RequestCtx<'_>) -> Option<(String, Vec<u8>)> {
    let value = ctx.parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded.get(..colon)?.to_vec()).ok()?;
    let password = decoded.get(colon + 1..)?.to_vec();
    Some((user, password))
}

fn challenge(table: &UserTable) -> Flow {
    let mut response = plain(StatusCode::UNAUTHORIZED, "authentication required\n");
    let value = format!("Basic realm=\"{}\", charset=\"UTF-8\"", table.auth.realm);
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    Flow::Answer(response)
}
