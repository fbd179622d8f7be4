use serde::{Deserialize, Serialize};

use crate::ExtensionKey;

/// A request or response transformation, applied in the order given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Filter {
    RequestHeaders(HeaderModifier),
    ResponseHeaders(HeaderModifier),
    /// Answers the request itself; no backend is contacted.
    Redirect(Redirect),
    Rewrite(Rewrite),
    /// RequestMirror: a copy of the request goes to another cluster too.
    Mirror(Mirror),
    /// CORS: preflights answered by the gateway, response headers added.
    Cors(Cors),
    /// A Coxswain filter resource (an ExtensionRef), found in
    /// [`crate::Config::extensions`].
    Extension(ExtensionKey),
    /// A filter that cannot be applied (an ExtensionRef that does not
    /// resolve): the rule's requests are answered `status` (the spec says an
    /// unresolved filter is never skipped).
    Deny {
        status: u16,
        reason: String,
    },
}

/// A CORS policy (GEP-1767). Origins are `*` or `scheme://host[:port]`,
/// the host possibly starting with a `*` label wildcard; methods and
/// headers may be `*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cors {
    pub allow_origins: Vec<String>,
    pub allow_methods: Vec<String>,
    pub allow_headers: Vec<String>,
    pub expose_headers: Vec<String>,
    pub allow_credentials: bool,
    /// `Access-Control-Max-Age` of preflight answers, in seconds.
    pub max_age_s: u32,
}

/// A fire-and-forget copy of a sampled share of requests: its response is
/// discarded and it never delays or fails the request it copies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mirror {
    /// Name of a [`crate::Cluster`] in the same config.
    pub cluster: String,
    /// `numerator / denominator` of requests are mirrored (1/1: all).
    pub numerator: u32,
    pub denominator: u32,
}

/// Header edits. Names are lower-case; `set` replaces, `add` appends,
/// `remove` deletes every value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeaderModifier {
    pub set: Vec<Header>,
    pub add: Vec<Header>,
    pub remove: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// RequestRedirect. `None` fields keep the request's value. When `port` is
/// `None` the proxy derives it as the spec says: the well-known port of an
/// explicit scheme, otherwise the listener's port; a well-known port for the
/// final scheme is omitted from `Location`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Redirect {
    pub scheme: Option<String>,
    pub hostname: Option<String>,
    pub port: Option<u16>,
    pub path: Option<PathModifier>,
    pub status_code: u16,
}

/// URLRewrite: what the upstream sees instead of the client's host/path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rewrite {
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PathModifier {
    ReplaceFullPath(String),
    /// Replaces the matched `PathPrefix` (valid only with a prefix match).
    ReplacePrefixMatch(String),
}
