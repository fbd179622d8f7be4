//! JwtAuth: issuer, audiences, where the token is and what the upstream
//! learns of it, and the key set — parsed here when it is inline, so a
//! broken one is reported in the resource's status and never reaches the
//! proxy; a remote one is fetched by the proxy (the translator does no
//! I/O).
//!
//! Like BasicAuth, anything that keeps the filter from being enforced as
//! written fails closed: its rules answer 503 and its status says why.

use coxswain_api::JwtAuth;
use coxswain_api::crds::JwksSource;
use coxswain_ir::{ClaimHeader, ExtensionSpec, RemoteJwks, TokenHeader, parse_jwks};

use super::{Resolved, accepted, invalid};
use crate::duration::parse_duration_ms;
use crate::route::is_token;

const DEFAULT_REFRESH_MS: u64 = 5 * 60 * 1000;
const DEFAULT_CLOCK_SKEW_MS: u64 = 60 * 1000;

/// Headers the gateway owns on each hop (or routes by): a claim may not
/// be copied into one.
const RESERVED: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
    "content-type",
];

pub fn resolve(cr: &JwtAuth) -> Resolved {
    match parse(cr) {
        Ok(auth) => Resolved {
            spec: ExtensionSpec::JwtAuth(auth),
            conditions: accepted(),
        },
        Err(message) => Resolved {
            spec: ExtensionSpec::Broken {
                status: 503,
                reason: message.clone(),
            },
            conditions: invalid(message),
        },
    }
}

fn parse(cr: &JwtAuth) -> Result<coxswain_ir::JwtAuth, String> {
    let spec = &cr.spec;
    if spec.issuer.is_empty() {
        return Err("spec.issuer: must not be empty".into());
    }
    let from_headers = if spec.from_headers.is_empty() {
        vec![TokenHeader {
            name: "authorization".into(),
            value_prefix: "Bearer ".into(),
        }]
    } else {
        spec.from_headers
            .iter()
            .map(|h| {
                Ok(TokenHeader {
                    name: header_name("spec.fromHeaders[].name", &h.name)?,
                    value_prefix: h.value_prefix.clone().unwrap_or_default(),
                })
            })
            .collect::<Result<_, String>>()?
    };
    let claim_to_headers = spec
        .claim_to_headers
        .iter()
        .map(|c| {
            if c.claim.is_empty() {
                return Err("spec.claimToHeaders[].claim: must not be empty".into());
            }
            Ok(ClaimHeader {
                claim: c.claim.clone(),
                header: output_header("spec.claimToHeaders[].header", &c.header, &from_headers)?,
            })
        })
        .collect::<Result<_, String>>()?;
    let forward_payload_header = spec
        .forward_payload_header
        .as_deref()
        .map(|h| output_header("spec.forwardPayloadHeader", h, &from_headers))
        .transpose()?;
    let clock_skew_ms = spec
        .clock_skew
        .as_deref()
        .map(parse_duration_ms)
        .transpose()
        .map_err(|e| format!("spec.clockSkew: {e}"))?
        .unwrap_or(DEFAULT_CLOCK_SKEW_MS);
    Ok(coxswain_ir::JwtAuth {
        issuer: spec.issuer.clone(),
        audiences: spec.audiences.clone(),
        jwks: jwks(&spec.jwks)?,
        from_headers,
        claim_to_headers,
        forward_payload_header,
        forward: spec.forward,
        clock_skew_secs: clock_skew_ms / 1000,
    })
}

fn jwks(source: &JwksSource) -> Result<coxswain_ir::JwksSource, String> {
    match (&source.inline, &source.remote) {
        (Some(inline), None) => parse_jwks(&inline.jwks)
            .map(coxswain_ir::JwksSource::Inline)
            .map_err(|e| format!("spec.jwks.inline: {e}")),
        (None, Some(remote)) => {
            let uri = remote.uri.trim();
            let rest = uri
                .strip_prefix("https://")
                .or_else(|| uri.strip_prefix("http://"));
            let host_ok =
                rest.is_some_and(|r| !r.is_empty() && !r.starts_with(['/', '?', '#', ':']));
            if !host_ok
                || uri
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
            {
                return Err(format!(
                    "spec.jwks.remote.uri: {uri:?} is not an http:// or https:// URL"
                ));
            }
            let refresh_interval_ms = remote
                .refresh_interval
                .as_deref()
                .map(parse_duration_ms)
                .transpose()
                .map_err(|e| format!("spec.jwks.remote.refreshInterval: {e}"))?
                .unwrap_or(DEFAULT_REFRESH_MS);
            if refresh_interval_ms < 1000 {
                return Err("spec.jwks.remote.refreshInterval: at least 1s".into());
            }
            Ok(coxswain_ir::JwksSource::Remote(RemoteJwks {
                uri: uri.to_string(),
                refresh_interval_ms,
            }))
        }
        (Some(_), Some(_)) => Err("spec.jwks: set only one of inline and remote".into()),
        (None, None) => Err("spec.jwks: set one of inline and remote".into()),
    }
}

fn header_name(field: &str, name: &str) -> Result<String, String> {
    if !is_token(name) {
        return Err(format!("{field}: {name:?} is not a header name"));
    }
    Ok(name.to_ascii_lowercase())
}

/// A header the filter writes for the upstream: never one the gateway
/// owns, nor one a token is read from.
fn output_header(field: &str, name: &str, from: &[TokenHeader]) -> Result<String, String> {
    let lower = header_name(field, name)?;
    if RESERVED.contains(&lower.as_str()) || from.iter().any(|h| h.name == lower) {
        return Err(format!("{field}: {name:?} cannot be set by JwtAuth"));
    }
    Ok(lower)
}
