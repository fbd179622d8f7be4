//! JwtAuth, compiled: header names parsed, the challenge's realm quoted,
//! and the keys ready for `ring` — inline ones now, remote ones as they
//! are fetched.

pub mod fetch;
pub mod keys;
pub mod remote;
pub mod seen;
pub mod token;

use std::sync::Arc;

use coxswain_ir::{JwksSource, JwtAuth};
use http::{HeaderName, HeaderValue};

use keys::KeySet;
use remote::RemoteKeys;
use seen::VerifiedSignatures;

/// One JwtAuth resource as the stage uses it.
#[derive(Debug)]
pub struct CompiledJwtAuth {
    pub auth: JwtAuth,
    /// Where a token may be, and what precedes it there.
    pub from: Vec<(HeaderName, String)>,
    /// Claim name and the header it is copied to.
    pub claims: Vec<(String, HeaderName)>,
    pub payload_header: Option<HeaderName>,
    /// `Bearer realm="<issuer>"`, quoted.
    challenge: String,
    keys: Keys,
    /// Signatures already verified with the current keys.
    pub seen: VerifiedSignatures,
}

#[derive(Debug)]
enum Keys {
    Inline(Arc<KeySet>),
    /// Fetched by the proxy; none yet: every request is answered 503.
    Remote(RemoteKeys),
}

impl CompiledJwtAuth {
    /// `Err` when a name the translator checked does not parse here.
    pub fn compile(auth: &JwtAuth) -> Result<Self, String> {
        let name = |n: &str| HeaderName::from_bytes(n.as_bytes()).map_err(|e| format!("{n}: {e}"));
        let from = auth
            .from_headers
            .iter()
            .map(|h| Ok((name(&h.name)?, h.value_prefix.clone())))
            .collect::<Result<_, String>>()?;
        let claims = auth
            .claim_to_headers
            .iter()
            .map(|c| Ok((c.claim.clone(), name(&c.header)?)))
            .collect::<Result<_, String>>()?;
        let payload_header = auth
            .forward_payload_header
            .as_deref()
            .map(name)
            .transpose()?;
        let keys = match &auth.jwks {
            JwksSource::Inline(jwks) => Keys::Inline(Arc::new(KeySet::new(jwks))),
            JwksSource::Remote(source) => Keys::Remote(RemoteKeys::start(source)),
        };
        Ok(CompiledJwtAuth {
            challenge: format!("Bearer realm=\"{}\"", quoted(&auth.issuer)),
            auth: auth.clone(),
            from,
            claims,
            payload_header,
            keys,
            seen: VerifiedSignatures::default(),
        })
    }

    /// The keys to verify with, if there are any yet.
    pub fn keys(&self) -> Option<Arc<KeySet>> {
        match &self.keys {
            Keys::Inline(keys) => Some(keys.clone()),
            Keys::Remote(remote) => remote.current(),
        }
    }

    /// The `WWW-Authenticate` value of a refusal: without an error for a
    /// request that had no token (RFC 6750 section 3.1), else
    /// `invalid_token` and why.
    pub fn challenge(&self, invalid: Option<&str>) -> Option<HeaderValue> {
        let value = match invalid {
            None => self.challenge.clone(),
            Some(why) => format!(
                "{}, error=\"invalid_token\", error_description=\"{}\"",
                self.challenge,
                quoted(why)
            ),
        };
        HeaderValue::from_str(&value).ok()
    }
}

/// Text for inside a quoted-string: `"` and `\` escaped, anything a header
/// cannot carry dropped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
