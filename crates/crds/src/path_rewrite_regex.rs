//! `PathRewriteRegex`: a regular-expression rewrite of the request path.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Rewrites the path the upstream is asked for (ExtensionRef filter,
/// HTTPRoute only): every match of `pattern` in the path is replaced by
/// `substitution`. The query string is kept as it was.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "PathRewriteRegex",
    plural = "pathrewriteregexes",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct PathRewriteRegexSpec {
    /// A regular expression (Rust `regex` syntax, RE2-like: no
    /// backreferences or lookaround), matched against the path.
    #[schemars(length(min = 1, max = 1024))]
    pub pattern: String,
    /// What each match becomes; `$1` or `${name}` insert a capture group
    /// (`$$` is a literal `$`).
    #[schemars(length(max = 1024))]
    pub substitution: String,
}
