//! A compact JWS token checked against a key set and a JwtAuth's claims
//! rules: the signature first, then `iss`, `exp` (required), `nbf`,
//! `iat` and `aud`. Refusals carry the text the 401's
//! `error_description` gives.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use coxswain_ir::{JwsAlg, JwtAuth};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::keys::{KeyRefusal, KeySet};
use super::seen::{VerifiedSignatures, token_digest};

/// Larger tokens are refused before any decoding.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A token whose signature and claims passed.
#[derive(Debug)]
pub struct Verified<'t> {
    pub claims: Map<String, Value>,
    /// The payload as the token carries it (base64url).
    pub payload: &'t str,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    /// Extensions that must be understood: we understand none.
    #[serde(default)]
    crit: Option<serde::de::IgnoredAny>,
}

/// Checks `token` at `now` (seconds since the epoch). A signature `seen`
/// holds for this key set is not verified again; one that verifies is
/// added to it.
pub fn verify<'t>(
    token: &'t str,
    keys: &KeySet,
    auth: &JwtAuth,
    now: u64,
    seen: &VerifiedSignatures,
) -> Result<Verified<'t>, &'static str> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err("token too large");
    }
    let mut parts = token.split('.');
    let (Some(header_b64), Some(payload), Some(sig_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed token");
    };
    let header: Header = decode_json(header_b64).ok_or("malformed token header")?;
    if header.crit.is_some() {
        return Err("unsupported critical header");
    }
    // `none` and HS* are not JwsAlgs: nothing can select them.
    let alg = JwsAlg::from_name(&header.alg).ok_or("algorithm not allowed")?;
    let signature = URL_SAFE_NO_PAD
        .decode(sig_b64)
        .map_err(|_| "malformed signature")?;
    let signed = token
        .get(..header_b64.len() + 1 + payload.len())
        .ok_or("malformed token")?;
    // (Comparing digests in variable time is fine: learning one tells
    // nothing about a token that would have it.)
    let digest = token_digest(token);
    if !seen.contains(&digest, keys.id()) {
        keys.verify(alg, header.kid.as_deref(), signed.as_bytes(), &signature)
            .map_err(|e| match e {
                KeyRefusal::NoKey => "no key for the token's kid and alg",
                KeyRefusal::BadSignature => "bad signature",
            })?;
        seen.insert(digest, keys.id());
    }
    let claims: Map<String, Value> = decode_json(payload).ok_or("malformed token payload")?;
    check_claims(&claims, auth, now)?;
    Ok(Verified { claims, payload })
}

fn decode_json<T: serde::de::DeserializeOwned>(b64: &str) -> Option<T> {
    let bytes = URL_SAFE_NO_PAD.decode(b64).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn check_claims(claims: &Map<String, Value>, auth: &JwtAuth, now: u64) -> Result<(), &'static str> {
    if claims.get("iss").and_then(Value::as_str) != Some(auth.issuer.as_str()) {
        return Err("wrong issuer");
    }
    let now = now as f64;
    let skew = auth.clock_skew_secs as f64;
    let time = |name: &str| -> Result<Option<f64>, &'static str> {
        match claims.get(name) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or("malformed time claim"),
        }
    };
    let exp = time("exp")?.ok_or("token has no expiry")?;
    if now >= exp + skew {
        return Err("token expired");
    }
    if time("nbf")?.is_some_and(|nbf| now + skew < nbf) {
        return Err("token not yet valid");
    }
    if time("iat")?.is_some_and(|iat| iat > now + skew) {
        return Err("token issued in the future");
    }
    if !auth.audiences.is_empty() {
        let wanted = |a: &Value| {
            a.as_str()
                .is_some_and(|a| auth.audiences.iter().any(|w| w == a))
        };
        let ok = match claims.get("aud") {
            Some(Value::Array(list)) => list.iter().any(wanted),
            Some(one) => wanted(one),
            None => false,
        };
        if !ok {
            return Err("wrong audience");
        }
    }
    Ok(())
}
