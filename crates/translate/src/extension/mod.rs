//! Coxswain's own filter resources (group `gateway.coxswain-labs.dev`),
//! referenced from route rules by ExtensionRef filters. One file per kind
//! turns a resource into its IR [`ExtensionSpec`] and its status.
//!
//! - A rule's ExtensionRef becomes [`Filter::Extension`] when the resource
//!   exists, and [`Filter::Deny`] (500) when it does not or names a kind
//!   we do not have: the spec says an unresolved filter is never skipped.
//!   The route's `ResolvedRefs` is then False (`InvalidKind` or
//!   `BackendNotFound`, the reasons the spec uses for backendRefs).
//! - A kind that does not apply to GRPCRoute drops the GRPCRoute rule
//!   (`PartiallyInvalid` / `UnsupportedValue`), so it never serves
//!   unfiltered.
//! - The resources a config's rules use are resolved once into
//!   [`coxswain_ir::Config::extensions`]; each one's Secrets and
//!   ConfigMaps are read there, not in route translation, so rotating a
//!   Secret recompiles no route.

mod basic_auth;
mod compression;
mod external_auth;
mod gateway_auth;
mod htpasswd;
mod inline;
mod ip_access;
mod jwt_auth;
mod path_rewrite_regex;
mod rate_limit;
mod request_size_limit;

use std::collections::{BTreeMap, BTreeSet};

use coxswain_api::crds::FilterStatus;
use coxswain_api::{Kind, ObjectKey, Snapshot};
use coxswain_ir::{Extension, ExtensionKey, ExtensionKind, ExtensionSpec, Filter, RouteKind};

use crate::Options;
use crate::conditions::{Cond, Reason, Stamp};
use crate::route::backends::Unresolved;
pub use basic_auth::valid_realm;
pub use gateway_auth::GatewayAuthIndex;
pub use inline::{basic_auth as inline_basic_auth, check_path_rewrite, default_compression};
pub use request_size_limit::parse_size;

/// The API group of Coxswain's resources.
pub const GROUP: &str = "gateway.coxswain-labs.dev";

/// The kind of Snapshot object behind an extension kind.
pub fn api_kind(kind: ExtensionKind) -> Kind {
    match kind {
        ExtensionKind::BasicAuth => Kind::BasicAuth,
        ExtensionKind::Compression => Kind::Compression,
        ExtensionKind::ExternalAuth => Kind::CoxswainExternalAuth,
        ExtensionKind::IpAccessControl => Kind::IpAccessControl,
        ExtensionKind::JwtAuth => Kind::JwtAuth,
        ExtensionKind::PathRewriteRegex => Kind::PathRewriteRegex,
        ExtensionKind::RateLimit => Kind::RateLimit,
        ExtensionKind::RequestSizeLimit => Kind::RequestSizeLimit,
    }
}

/// Whether a GRPCRoute rule may use the kind (the user guide's list).
fn applies_to_grpc(kind: ExtensionKind) -> bool {
    match kind {
        // An HTTP/browser idiom: gRPC clients use bearer tokens or mTLS.
        ExtensionKind::BasicAuth => false,
        // gRPC has its own message compression (grpc-encoding); a gRPC
        // response is never compressed here anyway.
        ExtensionKind::Compression => false,
        // Unlike the user guide (not yet for GRPCRoute): denials become
        // gRPC statuses like every local answer.
        ExtensionKind::ExternalAuth => true,
        ExtensionKind::IpAccessControl => true,
        // Bearer tokens are how gRPC clients authenticate.
        ExtensionKind::JwtAuth => true,
        // A gRPC path is the method's address, not something to rewrite.
        ExtensionKind::PathRewriteRegex => false,
        ExtensionKind::RateLimit => true,
        // Enforced on gRPC streams too (RESOURCE_EXHAUSTED), unlike the
        // user guide, which leaves them unlimited.
        ExtensionKind::RequestSizeLimit => true,
    }
}

/// What a rule's ExtensionRef compiles to.
pub enum RefOutcome {
    /// The filter, and the `ResolvedRefs` problem when it is a `Deny`.
    Filter(Filter, Option<Unresolved>),
    /// The kind exists but not for this route kind: the rule is invalid.
    NotForRouteKind(String),
}

/// Resolves the ExtensionRef `(group, kind, name)` of a rule of a
/// `route_kind` route in `namespace` (ExtensionRefs are local references).
pub fn resolve_ref(
    snapshot: &Snapshot,
    route_kind: RouteKind,
    namespace: &str,
    (group, kind, name): (&str, &str, &str),
) -> RefOutcome {
    let deny = |reason: Reason, message: String| {
        RefOutcome::Filter(
            Filter::Deny {
                status: 500,
                reason: message.clone(),
            },
            Some((reason, message)),
        )
    };
    let found = (group == GROUP)
        .then(|| ExtensionKind::from_ref_kind(kind))
        .flatten();
    let Some(extension_kind) = found else {
        return deny(
            Reason::InvalidKind,
            format!("ExtensionRef {group}/{kind} {name}: not a filter kind Coxswain has"),
        );
    };
    if route_kind == RouteKind::Grpc && !applies_to_grpc(extension_kind) {
        return RefOutcome::NotForRouteKind(format!("{kind} does not apply to GRPCRoute"));
    }
    let key = ObjectKey {
        namespace: namespace.into(),
        name: name.into(),
    };
    if !exists(snapshot, extension_kind, &key) {
        return deny(
            Reason::BackendNotFound,
            format!("ExtensionRef {kind} {key} not found"),
        );
    }
    RefOutcome::Filter(
        Filter::Extension(ExtensionKey {
            kind: extension_kind,
            namespace: key.namespace.to_string(),
            name: key.name.to_string(),
        }),
        None,
    )
}

fn exists(snapshot: &Snapshot, kind: ExtensionKind, key: &ObjectKey) -> bool {
    match kind {
        ExtensionKind::BasicAuth => snapshot.basic_auths.contains_key(key),
        ExtensionKind::Compression => snapshot.compressions.contains_key(key),
        ExtensionKind::ExternalAuth => snapshot.external_auths.contains_key(key),
        ExtensionKind::IpAccessControl => snapshot.ip_access_controls.contains_key(key),
        ExtensionKind::JwtAuth => snapshot.jwt_auths.contains_key(key),
        ExtensionKind::PathRewriteRegex => snapshot.path_rewrite_regexes.contains_key(key),
        ExtensionKind::RateLimit => snapshot.rate_limits.contains_key(key),
        ExtensionKind::RequestSizeLimit => snapshot.request_size_limits.contains_key(key),
    }
}

/// A resource as the data plane enforces it, and its status conditions.
pub struct Resolved {
    pub spec: ExtensionSpec,
    pub conditions: Vec<Cond>,
}

fn resolve(snapshot: &Snapshot, kind: ExtensionKind, key: &ObjectKey) -> Option<Resolved> {
    match kind {
        ExtensionKind::BasicAuth => snapshot
            .basic_auths
            .get(key)
            .map(|cr| basic_auth::resolve(snapshot, cr)),
        ExtensionKind::Compression => snapshot
            .compressions
            .get(key)
            .map(|cr| compression::resolve(cr)),
        ExtensionKind::ExternalAuth => snapshot
            .external_auths
            .get(key)
            .map(|cr| external_auth::resolve(snapshot, cr)),
        ExtensionKind::IpAccessControl => snapshot
            .ip_access_controls
            .get(key)
            .map(|cr| ip_access::resolve(cr)),
        ExtensionKind::JwtAuth => snapshot.jwt_auths.get(key).map(|cr| jwt_auth::resolve(cr)),
        ExtensionKind::PathRewriteRegex => snapshot
            .path_rewrite_regexes
            .get(key)
            .map(|cr| path_rewrite_regex::resolve(cr)),
        ExtensionKind::RateLimit => snapshot
            .rate_limits
            .get(key)
            .map(|cr| rate_limit::resolve(snapshot, key, cr)),
        ExtensionKind::RequestSizeLimit => snapshot
            .request_size_limits
            .get(key)
            .map(|cr| request_size_limit::resolve(cr)),
    }
}

/// The IR table of the resources `keys` name (sorted by key).
pub fn table(snapshot: &Snapshot, keys: &BTreeSet<ExtensionKey>) -> Vec<Extension> {
    keys.iter()
        .map(|key| {
            let object = ObjectKey {
                namespace: key.namespace.as_str().into(),
                name: key.name.as_str().into(),
            };
            let spec = match resolve(snapshot, key.kind, &object) {
                Some(resolved) => resolved.spec,
                // Rules only reference resources that exist; this is the
                // safe answer should one vanish between the two reads.
                None => ExtensionSpec::Broken {
                    status: 500,
                    reason: format!("{key} not found"),
                },
            };
            Extension {
                key: key.clone(),
                spec,
            }
        })
        .collect()
}

/// The clusters the resources `keys` send to (the external authorization
/// services), by name.
pub fn clusters(
    snapshot: &Snapshot,
    keys: &BTreeSet<ExtensionKey>,
) -> impl Iterator<Item = crate::route::ClusterSpec> {
    keys.iter()
        .filter(|key| key.kind == ExtensionKind::ExternalAuth)
        .filter_map(|key| {
            let cr = snapshot
                .external_auths
                .get(&ObjectKey::new(&key.namespace, &key.name))?;
            external_auth::cluster(snapshot, cr)
        })
}

/// The status of every filter resource in the snapshot.
pub fn statuses(
    snapshot: &Snapshot,
    options: &Options,
) -> BTreeMap<(Kind, ObjectKey), FilterStatus> {
    let mut out = BTreeMap::new();
    let gateway_auth = GatewayAuthIndex::new(snapshot);
    for kind in ExtensionKind::ALL {
        for (key, generation) in objects(snapshot, *kind) {
            let Some(resolved) = resolve(snapshot, *kind, &key) else {
                continue;
            };
            let stamp = Stamp {
                generation,
                now: &options.now,
            };
            let ancestors = match snapshot.external_auths.get(&key) {
                Some(cr) if *kind == ExtensionKind::ExternalAuth => gateway_auth.ancestors(
                    snapshot,
                    (&key, cr),
                    resolved.conditions.first(),
                    (&stamp, &options.controller_name),
                ),
                _ => Vec::new(),
            };
            out.insert(
                (api_kind(*kind), key),
                FilterStatus {
                    conditions: stamp.all(resolved.conditions),
                    ancestors,
                },
            );
        }
    }
    out
}

/// Keys and generations of every resource of `kind`.
fn objects(snapshot: &Snapshot, kind: ExtensionKind) -> Vec<(ObjectKey, Option<i64>)> {
    match kind {
        ExtensionKind::BasicAuth => snapshot
            .basic_auths
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::Compression => snapshot
            .compressions
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::ExternalAuth => snapshot
            .external_auths
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::IpAccessControl => snapshot
            .ip_access_controls
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::JwtAuth => snapshot
            .jwt_auths
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::PathRewriteRegex => snapshot
            .path_rewrite_regexes
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::RateLimit => snapshot
            .rate_limits
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
        ExtensionKind::RequestSizeLimit => snapshot
            .request_size_limits
            .iter()
            .map(|(k, o)| (k.clone(), o.metadata.generation))
            .collect(),
    }
}

/// The conditions of a resource the data plane enforces as given.
pub fn accepted() -> Vec<Cond> {
    accepted_with("enforced by the rules that reference it")
}

/// [`accepted`], with a message saying something about how it applies.
pub fn accepted_with(message: &str) -> Vec<Cond> {
    use crate::conditions::ConditionType;
    vec![
        Cond::new(
            ConditionType::Accepted,
            true,
            Reason::Accepted,
            message.to_string(),
        ),
        Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        ),
    ]
}

/// A resource enforced as `parsed` says, or, when it does not parse, not
/// served at all: its rules answer 500 and its status says why.
pub fn enforced_or_refused(parsed: Result<ExtensionSpec, String>) -> Resolved {
    match parsed {
        Ok(spec) => Resolved {
            spec,
            conditions: accepted(),
        },
        Err(message) => Resolved {
            spec: ExtensionSpec::Broken {
                status: 500,
                reason: message.clone(),
            },
            conditions: invalid(message),
        },
    }
}

/// The conditions of a resource that cannot be enforced: the rules using
/// it answer every request with an error instead.
pub fn invalid(message: String) -> Vec<Cond> {
    use crate::conditions::ConditionType;
    vec![
        Cond::new(ConditionType::Accepted, false, Reason::Invalid, message),
        Cond::new(
            ConditionType::ResolvedRefs,
            true,
            Reason::ResolvedRefs,
            "all references resolved",
        ),
    ]
}
