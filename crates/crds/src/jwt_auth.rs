//! `JwtAuth`: a route rule admits only requests carrying a JSON Web Token
//! signed by one of the issuer's keys.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Verifies a bearer JWT (asymmetric signatures only) against the
/// issuer's key set, referenced by an ExtensionRef filter. A request
/// without a valid token gets 401; when the key set cannot be had, 503.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "JwtAuth",
    plural = "jwtauths",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct JwtAuthSpec {
    /// The token's `iss` must be exactly this.
    #[schemars(length(min = 1, max = 2048))]
    pub issuer: String,
    /// When not empty, the token's `aud` must contain one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub audiences: Vec<String>,
    /// Where the verification keys come from: exactly one of `inline` and
    /// `remote`.
    pub jwks: JwksSource,
    /// Where the token is read from; default `Authorization: Bearer <token>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub from_headers: Vec<TokenHeader>,
    /// Claims copied to request headers for the upstream (a client's own
    /// header of that name is removed first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub claim_to_headers: Vec<ClaimToHeader>,
    /// A request header that carries the token's payload (base64url) to the
    /// upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_payload_header: Option<String>,
    /// Keep the token's header on the request to the upstream (default: it
    /// is removed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward: bool,
    /// Leeway for `exp`, `nbf` and `iat` (Gateway API duration; default `60s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew: Option<String>,
}

/// The key set: given in the resource, or fetched from a URL.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JwksSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<InlineJwks>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteJwks>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InlineJwks {
    /// A JWK Set (RFC 7517) as JSON text.
    #[schemars(length(max = 65536))]
    pub jwks: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteJwks {
    /// `https://` (or `http://`) URL of the JWK Set.
    #[schemars(length(min = 1, max = 2048))]
    pub uri: String,
    /// How often the set is fetched again (default `5m`; a shorter
    /// `Cache-Control: max-age` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_interval: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenHeader {
    pub name: String,
    /// What precedes the token in the value (e.g. `Bearer `); empty: the
    /// whole value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_prefix: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimToHeader {
    /// A top-level claim whose value is a string, number or boolean.
    pub claim: String,
    pub header: String,
}
