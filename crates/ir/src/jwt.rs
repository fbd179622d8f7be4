//! JwtAuth as the proxy enforces it: which tokens it admits, where it
//! finds them, and what it tells the upstream about them.

use serde::{Deserialize, Serialize};

use crate::jwks::Jwk;

/// A request must carry a token signed by one of the keys, issued by
/// `issuer` (and for one of `audiences`, when there are any), and valid
/// now give or take `clock_skew_secs`; else 401.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JwtAuth {
    pub issuer: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    pub jwks: JwksSource,
    /// Tried in order; the first header present with its prefix holds the
    /// token.
    pub from_headers: Vec<TokenHeader>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claim_to_headers: Vec<ClaimHeader>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_payload_header: Option<String>,
    /// Keep the token's header for the upstream.
    #[serde(default)]
    pub forward: bool,
    pub clock_skew_secs: u64,
}

/// The keys: given in the resource, or fetched by the proxy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JwksSource {
    Inline(Vec<Jwk>),
    Remote(RemoteJwks),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteJwks {
    /// An `http` or `https` URL.
    pub uri: String,
    pub refresh_interval_ms: u64,
}

/// A request header (lower case) and what precedes the token in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenHeader {
    pub name: String,
    pub value_prefix: String,
}

/// A top-level claim copied into a request header (lower case).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimHeader {
    pub claim: String,
    pub header: String,
}
