//! `RateLimit`: how many requests a route rule takes per client (or per
//! header value, or in all), per unit of time.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// A token bucket per rule and key, referenced by an ExtensionRef filter:
/// `requests` per `unit` on average, up to `burst` at once. A request
/// past it is answered 429 with `Retry-After` (gRPC: RESOURCE_EXHAUSTED).
/// Counted by each proxy process on its own.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "RateLimit",
    plural = "ratelimits",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitSpec {
    /// Requests per `unit`, on average.
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub requests: u32,
    pub unit: RateLimitUnit,
    /// How many requests may come at once (the bucket's size); `requests`
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub burst: Option<u32>,
    /// What a bucket is kept for; the client's address when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<RateLimitKey>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RateLimitUnit {
    #[default]
    Second,
    Minute,
    Hour,
}

/// A bucket per client address, per value of a request header (requests
/// without it share one bucket), or one for the whole rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitKey {
    #[serde(rename = "type")]
    pub kind: RateLimitKeyType,
    /// The header, for `type: Header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub name: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RateLimitKeyType {
    #[default]
    ClientIP,
    Header,
    Route,
}
