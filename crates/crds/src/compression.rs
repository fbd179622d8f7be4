//! `Compression`: which encodings a route rule's responses may be sent in.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Compresses the responses of the rules that reference it (ExtensionRef
/// filter, HTTPRoute only), in the enabled encoding the client's
/// `Accept-Encoding` prefers (brotli, then zstd, then gzip on a tie). A
/// response is streamed through the encoder, never buffered whole. With
/// no encoding enabled the resource does nothing.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "Compression",
    plural = "compressions",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct CompressionSpec {
    /// Offer `gzip`.
    #[serde(default)]
    pub gzip: bool,
    /// Offer `br` (brotli).
    #[serde(default)]
    pub brotli: bool,
    /// Offer `zstd`.
    #[serde(default)]
    pub zstd: bool,
    /// 1 (fastest) to 9 (smallest); 6 when unset. Mapped onto each
    /// encoding's own scale (see docs/filters.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 9))]
    pub level: Option<u32>,
    /// Responses whose `Content-Length` is below this many bytes are sent
    /// as they are; 1024 when unset. A response of unknown length is
    /// compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1_073_741_824))]
    pub min_size: Option<u64>,
    /// The media types compressed (`type/subtype`, or `type/*`), compared
    /// case-insensitively without parameters. When unset: text/html,
    /// text/plain, text/css, application/json, application/javascript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), inner(length(min = 3, max = 255)))]
    pub types: Option<Vec<String>>,
}
