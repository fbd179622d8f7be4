//! The config's filter resources (ExtensionRefs), compiled once and shared
//! by every rule that references them. An entry whose IR did not change is
//! the same object after a reload, so what it holds at run time (counters,
//! fetched keys) survives, and routes using it need no recompiling.

use std::collections::HashMap;
use std::sync::Arc;

use coxswain_ir::{Config, ExtensionKey, ExtensionSpec, IpAccess};

use super::compression::CompressionPolicy;
use super::rate_limit::{CompiledRateLimit, StoreClients};
use crate::auth::ext_authz::CompiledExternalAuth;
use crate::auth::jwt::CompiledJwtAuth;
use crate::auth::password::UserTable;

/// One filter resource as the stages use it.
#[derive(Debug)]
pub enum CompiledExtension {
    IpAccess(IpAccess),
    BasicAuth(UserTable),
    Compression(Arc<CompressionPolicy>),
    JwtAuth(CompiledJwtAuth),
    /// Its cluster is looked up by the rules using it (as a mirror's is).
    ExternalAuth(Arc<CompiledExternalAuth>),
    PathRewrite {
        regex: regex::Regex,
        substitution: String,
    },
    SizeLimit {
        max_bytes: u64,
    },
    /// Its buckets live here, so they survive a reload that leaves the
    /// resource unchanged.
    RateLimit(Arc<CompiledRateLimit>),
    /// Fails open: its rules serve as if it were not there.
    Inactive,
    /// Cannot be enforced: its rules answer `status`.
    Broken {
        status: http::StatusCode,
        reason: String,
    },
}

impl CompiledExtension {
    fn compile(spec: &ExtensionSpec, stores: &mut StoreClients) -> Self {
        match spec {
            ExtensionSpec::IpAccess(access) => CompiledExtension::IpAccess(access.clone()),
            ExtensionSpec::BasicAuth(auth) => CompiledExtension::BasicAuth(UserTable::new(auth)),
            ExtensionSpec::Compression(c) if c.enabled() => {
                CompiledExtension::Compression(Arc::new(CompressionPolicy::new(c)))
            }
            // No encoding enabled: the resource does nothing.
            ExtensionSpec::Compression(_) => CompiledExtension::Inactive,
            ExtensionSpec::JwtAuth(auth) => match CompiledJwtAuth::compile(auth) {
                Ok(jwt) => CompiledExtension::JwtAuth(jwt),
                // The translator validated it; fail closed rather than open.
                Err(reason) => CompiledExtension::Broken {
                    status: http::StatusCode::SERVICE_UNAVAILABLE,
                    reason,
                },
            },
            ExtensionSpec::ExternalAuth(auth) => {
                CompiledExtension::ExternalAuth(Arc::new(CompiledExternalAuth::compile(auth)))
            }
            ExtensionSpec::PathRewrite {
                pattern,
                substitution,
            } => match regex::RegexBuilder::new(pattern)
                .size_limit(coxswain_ir::MAX_REGEX_SIZE)
                .build()
            {
                Ok(regex) => CompiledExtension::PathRewrite {
                    regex,
                    substitution: substitution.clone(),
                },
                // The translator validated it; refuse rather than skip.
                Err(e) => CompiledExtension::Broken {
                    status: http::StatusCode::INTERNAL_SERVER_ERROR,
                    reason: e.to_string(),
                },
            },
            ExtensionSpec::RateLimit(limit) => {
                CompiledExtension::RateLimit(Arc::new(CompiledRateLimit::new(limit, stores)))
            }
            ExtensionSpec::SizeLimit { max_bytes } => CompiledExtension::SizeLimit {
                max_bytes: *max_bytes,
            },
            ExtensionSpec::Inactive { .. } => CompiledExtension::Inactive,
            ExtensionSpec::Broken { status, reason } => CompiledExtension::Broken {
                status: broken_status(*status),
                reason: reason.clone(),
            },
        }
    }
}

/// The status a broken filter answers: its own when it is an error
/// status, else 500.
pub fn broken_status(status: u16) -> http::StatusCode {
    http::StatusCode::from_u16(status)
        .ok()
        .filter(|s| s.is_client_error() || s.is_server_error())
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR)
}

type Entry = (ExtensionSpec, Arc<CompiledExtension>);

/// Every filter resource of one config, by key, and the store
/// connections they use (kept across reloads for the addresses still
/// named).
#[derive(Debug, Default)]
pub struct ExtensionSet(HashMap<ExtensionKey, Entry>, StoreClients);

impl ExtensionSet {
    /// Compiles `config`'s resources, keeping `previous` entries whose IR
    /// is unchanged.
    pub fn compile(config: &Config, previous: Option<&ExtensionSet>) -> Self {
        let mut stores = previous.map(|p| p.1.clone()).unwrap_or_default();
        stores.retain(|address, _| {
            config.extensions.iter().any(|e| {
                matches!(&e.spec, ExtensionSpec::RateLimit(l)
                    if l.global.as_ref().is_some_and(|g| g.address == *address))
            })
        });
        let entries = config
            .extensions
            .iter()
            .map(|e| {
                let kept = previous
                    .and_then(|p| p.0.get(&e.key))
                    .filter(|(spec, _)| *spec == e.spec)
                    .map(|(_, compiled)| compiled.clone());
                let compiled = kept.unwrap_or_else(|| {
                    if let ExtensionSpec::Inactive { reason } = &e.spec {
                        tracing::warn!(key = %e.key, %reason, "filter resource invalid; not applied");
                    }
                    Arc::new(CompiledExtension::compile(&e.spec, &mut stores))
                });
                (e.key.clone(), (e.spec.clone(), compiled))
            })
            .collect();
        ExtensionSet(entries, stores)
    }

    pub fn get(&self, key: &ExtensionKey) -> Option<&Arc<CompiledExtension>> {
        self.0.get(key).map(|(_, compiled)| compiled)
    }

    /// Exactly the same compiled entries as `other` (routes compiled
    /// against one may be reused with the other).
    pub fn same_entries(&self, other: &ExtensionSet) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().all(|(key, (_, compiled))| {
                other
                    .0
                    .get(key)
                    .is_some_and(|(_, o)| Arc::ptr_eq(compiled, o))
            })
    }
}
