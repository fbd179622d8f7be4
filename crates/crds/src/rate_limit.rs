//! `RateLimit`: how many requests a route rule takes per client (or per
//! header value, or in all), per unit of time.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// A token bucket per rule and key, referenced by an ExtensionRef filter:
/// `requests` per `unit` on average, up to `burst` at once. A request
/// past it is answered 429 with `Retry-After` (gRPC: RESOURCE_EXHAUSTED).
/// Counted by each proxy process on its own, or, with `global`, in a
/// Redis/Valkey server shared by the whole fleet.
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
    /// Keep the buckets in a Redis (or Valkey) server, so every proxy
    /// using it shares one budget; each proxy counts on its own when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<RateLimitGlobal>,
}

/// Where a global RateLimit counts, and what happens when it cannot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitGlobal {
    pub redis: RedisStore,
    /// What a request gets while the store does not answer (down,
    /// unreachable, or slower than 100 ms): `Deny` (503, the default: a
    /// limit that protects a service stays closed) or `Allow` (admitted
    /// unlimited, counted in a metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_store_unavailable: Option<StoreUnavailablePolicy>,
}

/// A Redis-protocol server, without AUTH or TLS.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisStore {
    /// `host:port` (an IPv6 address in brackets).
    #[schemars(length(min = 3, max = 261))]
    pub address: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StoreUnavailablePolicy {
    Allow,
    #[default]
    Deny,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RateLimitUnit {
    #[default]
    Second,
    Minute,
    Hour,
}

/// A bucket per client address, per value of a request header, per value
/// of a claim of the token JwtAuth verified on the same rule (requests
/// without the header or claim share one bucket), or one for the whole
/// rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitKey {
    #[serde(rename = "type")]
    pub kind: RateLimitKeyType,
    /// The header, for `type: Header`; the claim, for `type: JwtClaim`.
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
    JwtClaim,
}
