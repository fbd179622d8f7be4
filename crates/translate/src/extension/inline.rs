//! Filters that Ingress annotations describe instead of naming a
//! resource: resolved by the same code as the resource would be, so an
//! annotation and the equivalent resource are enforced alike.

use coxswain_api::crds::{BasicAuthSecretRef, BasicAuthSpec, CompressionSpec};
use coxswain_api::{BasicAuth, Compression, Snapshot};
use coxswain_ir::ExtensionSpec;

/// A BasicAuth reading Secret `secret` of `namespace`: what it enforces,
/// and why not when it cannot be (its rules then answer 503).
pub fn basic_auth(
    snapshot: &Snapshot,
    namespace: &str,
    secret: &str,
    realm: Option<&str>,
) -> ExtensionSpec {
    let mut cr = BasicAuth::new(
        "ingress-annotation",
        BasicAuthSpec {
            secret_ref: BasicAuthSecretRef {
                name: secret.to_string(),
                namespace: None,
            },
            realm: realm.map(str::to_string),
            forward_credentials: false,
        },
    );
    cr.metadata.namespace = Some(namespace.to_string());
    super::basic_auth::resolve(snapshot, &cr).spec
}

/// Compression with every default: gzip and brotli, level 6, responses
/// of 1024 bytes or more of the default content types.
pub fn default_compression() -> ExtensionSpec {
    let cr = Compression::new(
        "ingress-annotation",
        CompressionSpec {
            gzip: true,
            brotli: true,
            ..CompressionSpec::default()
        },
    );
    super::compression::resolve(&cr).spec
}

/// Whether PathRewriteRegex would accept `pattern` and `substitution`.
pub fn check_path_rewrite(pattern: &str, substitution: &str) -> Result<(), String> {
    super::path_rewrite_regex::check(pattern, substitution)
}
