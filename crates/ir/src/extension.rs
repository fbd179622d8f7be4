//! Coxswain's own filters (ExtensionRef custom resources), kept once per
//! config in [`crate::Config::extensions`] and referenced by rules through
//! [`crate::Filter::Extension`]: a Secret or key set read by several rules
//! is resolved and compiled once, and changing it touches no route.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{BasicAuth, Compression, ExternalAuth, IpCidr, JwtAuth};

/// The kinds of Coxswain filter resources (group
/// `gateway.coxswain-labs.dev`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ExtensionKind {
    BasicAuth,
    Compression,
    ExternalAuth,
    IpAccessControl,
    JwtAuth,
    PathRewriteRegex,
    RateLimit,
    RequestSizeLimit,
}

impl ExtensionKind {
    pub const ALL: &'static [ExtensionKind] = &[
        ExtensionKind::BasicAuth,
        ExtensionKind::Compression,
        ExtensionKind::ExternalAuth,
        ExtensionKind::IpAccessControl,
        ExtensionKind::JwtAuth,
        ExtensionKind::PathRewriteRegex,
        ExtensionKind::RateLimit,
        ExtensionKind::RequestSizeLimit,
    ];

    /// The kind an ExtensionRef names: the resource's Kubernetes `kind`,
    /// or the user guide's shorter name for it.
    pub fn from_ref_kind(kind: &str) -> Option<ExtensionKind> {
        if kind == "ExternalAuth" {
            return Some(ExtensionKind::ExternalAuth);
        }
        Self::ALL.iter().copied().find(|k| k.as_str() == kind)
    }

    /// The resource's Kubernetes `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionKind::BasicAuth => "BasicAuth",
            ExtensionKind::Compression => "Compression",
            ExtensionKind::ExternalAuth => "CoxswainExternalAuth",
            ExtensionKind::IpAccessControl => "IpAccessControl",
            ExtensionKind::JwtAuth => "JwtAuth",
            ExtensionKind::PathRewriteRegex => "PathRewriteRegex",
            ExtensionKind::RateLimit => "RateLimit",
            ExtensionKind::RequestSizeLimit => "RequestSizeLimit",
        }
    }
}

/// Which resource: kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ExtensionKey {
    pub kind: ExtensionKind,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ExtensionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// One filter resource, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    pub key: ExtensionKey,
    pub spec: ExtensionSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ExtensionSpec {
    IpAccess(IpAccess),
    BasicAuth(BasicAuth),
    /// Compression: responses encoded as the client accepts (a resource
    /// with no encoding enabled is kept, and does nothing).
    Compression(Compression),
    JwtAuth(JwtAuth),
    ExternalAuth(ExternalAuth),
    /// PathRewriteRegex: every match of `pattern` (validated, at most
    /// [`crate::MAX_REGEX_SIZE`] compiled) in the path becomes
    /// `substitution` (`$1`, `${name}` capture groups).
    PathRewrite {
        pattern: String,
        substitution: String,
    },
    RateLimit(RateLimit),
    /// RequestSizeLimit: the largest request body, in bytes.
    SizeLimit {
        max_bytes: u64,
    },
    /// A resource that fails open (a non-security filter with an invalid
    /// value): its rules serve as if it were not there, and its status
    /// says why.
    Inactive {
        reason: String,
    },
    /// The resource cannot be enforced (for instance, the Secret it reads
    /// is missing): the requests of every rule using it are answered
    /// `status` and never reach a backend.
    Broken {
        status: u16,
        reason: String,
    },
}

/// RateLimit: a token bucket per rule and key, `burst` deep, refilled at
/// one token every `period_ms / requests`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    /// The resource's name, the policy name in the `RateLimit` headers.
    pub name: String,
    pub requests: u32,
    pub period_ms: u64,
    pub burst: u32,
    pub key: RateLimitKey,
    /// Counted in a shared store for every proxy; each proxy counts on its
    /// own when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<GlobalRateLimit>,
}

/// A RateLimit's buckets kept in Redis (or Valkey), shared by a fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalRateLimit {
    /// `host:port` of the store.
    pub address: String,
    /// `namespace/name` of the resource: its part of the store's keys.
    pub scope: String,
    /// What a request gets when the store cannot answer in time.
    pub on_unavailable: StoreUnavailable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoreUnavailable {
    /// Admitted, unlimited, while the store is away.
    Allow,
    /// Refused with 503 while the store is away.
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RateLimitKey {
    ClientIp,
    /// A lower-case header name; requests without it share one bucket.
    Header(String),
    /// One bucket for the whole rule.
    Route,
    /// A claim of the token JwtAuth verified on the rule; requests without
    /// it (no JwtAuth, claim absent or not a string, number or boolean)
    /// share one bucket.
    JwtClaim(String),
}

/// IpAccessControl: the client's address must be in no `deny` range, and
/// in one of the `allow` ranges when there are any; else 403.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpAccess {
    pub allow: Vec<IpCidr>,
    pub deny: Vec<IpCidr>,
    /// 0: the client is the connection's peer; N: the address N entries
    /// from the right of `X-Forwarded-For`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub xff_trusted_hops: u8,
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

impl IpAccess {
    /// The address to judge: the peer, or the one `xff_trusted_hops`
    /// entries from the right of the `X-Forwarded-For` list (`entries`,
    /// every header value in order). `None` when that entry is missing or
    /// not an address: the request cannot be judged, so it is refused.
    pub fn client<'a>(
        &self,
        peer: std::net::IpAddr,
        entries: impl Iterator<Item = &'a str>,
    ) -> Option<std::net::IpAddr> {
        if self.xff_trusted_hops == 0 {
            return Some(peer);
        }
        let list: Vec<&str> = entries
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        let index = list.len().checked_sub(usize::from(self.xff_trusted_hops))?;
        list.get(index)?.parse().ok()
    }

    pub fn admits(&self, ip: std::net::IpAddr) -> bool {
        !self.deny.iter().any(|c| c.contains(ip))
            && (self.allow.is_empty() || self.allow.iter().any(|c| c.contains(ip)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(allow: &[&str], deny: &[&str]) -> IpAccess {
        let parse = |v: &[&str]| v.iter().map(|s| s.parse().unwrap()).collect();
        IpAccess {
            allow: parse(allow),
            deny: parse(deny),
            xff_trusted_hops: 0,
        }
    }

    #[test]
    fn the_client_is_the_entry_the_outermost_trusted_proxy_saw() {
        let peer: std::net::IpAddr = "10.0.0.9".parse().unwrap();
        let mut a = access(&[], &[]);
        let xff = ["198.51.100.7, 203.0.113.1", "192.0.2.44"];
        assert_eq!(a.client(peer, xff.iter().copied()), Some(peer));
        a.xff_trusted_hops = 1;
        assert_eq!(
            a.client(peer, xff.iter().copied()),
            "192.0.2.44".parse().ok()
        );
        a.xff_trusted_hops = 3;
        assert_eq!(
            a.client(peer, xff.iter().copied()),
            "198.51.100.7".parse().ok()
        );
        a.xff_trusted_hops = 4;
        assert_eq!(
            a.client(peer, xff.iter().copied()),
            None,
            "fewer entries than hops"
        );
        a.xff_trusted_hops = 1;
        assert_eq!(a.client(peer, ["unknown"].into_iter()), None);
        assert_eq!(a.client(peer, std::iter::empty()), None);
    }

    #[test]
    fn extension_refs_name_kinds_by_their_kind_or_the_guide_alias() {
        assert_eq!(
            ExtensionKind::from_ref_kind("CoxswainExternalAuth"),
            Some(ExtensionKind::ExternalAuth)
        );
        assert_eq!(
            ExtensionKind::from_ref_kind("ExternalAuth"),
            Some(ExtensionKind::ExternalAuth)
        );
        assert_eq!(
            ExtensionKind::from_ref_kind("JwtAuth"),
            Some(ExtensionKind::JwtAuth)
        );
        assert_eq!(ExtensionKind::from_ref_kind("Nope"), None);
    }

    #[test]
    fn deny_first_then_allow() {
        let a = access(&["203.0.113.0/24", "2001:db8::/32"], &["203.0.113.5"]);
        assert!(a.admits("203.0.113.9".parse().unwrap()));
        assert!(!a.admits("203.0.113.5".parse().unwrap()), "deny wins");
        assert!(!a.admits("198.51.100.1".parse().unwrap()), "outside allow");
        assert!(a.admits("2001:db8::1".parse().unwrap()));
        assert!(!a.admits("2001:db9::1".parse().unwrap()));
    }

    #[test]
    fn empty_lists_admit_everyone_and_deny_alone_only_denies() {
        assert!(access(&[], &[]).admits("192.0.2.1".parse().unwrap()));
        let d = access(&[], &["192.0.2.0/24"]);
        assert!(!d.admits("192.0.2.1".parse().unwrap()));
        assert!(d.admits("192.0.3.1".parse().unwrap()));
    }
}
