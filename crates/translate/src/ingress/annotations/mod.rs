//! Ingress annotations parsed into typed settings. Every setting has a
//! Coxswain spelling (`ingress.coxswain-labs.dev/NAME`) and, where
//! ingress-nginx has the feature, its spelling too
//! (`nginx.ingress.kubernetes.io/NAME`); both parse to the same values.
//! When both set one feature differently the Coxswain one wins and a
//! problem says so. Every other annotation under either prefix is
//! reported as unsupported: nothing is silently ignored.
//!
//! Pure: [`parse`] reads only the annotation map, so `coxswain migrate`
//! can use it as the translator does. See docs/ingress.md.

mod auth;
mod canary;
mod cors;
mod limits;
mod problem;
mod reader;
mod rewrite;
mod upstream;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use auth::BasicAuthAnnotation;
pub use canary::{Canary, CanaryHeader};
pub use coxswain_ir::{Balancer, Cors, HashKey};
pub use limits::{BodyLimit, CompressionAnnotation, IpAccessAnnotation};
pub use problem::AnnotationProblem;
pub use rewrite::{has_captures, substitution};
pub use upstream::BackendProtocol;

/// The Coxswain annotation prefix.
pub const COXSWAIN_PREFIX: &str = "ingress.coxswain-labs.dev/";
/// The ingress-nginx annotation prefix.
pub const NGINX_PREFIX: &str = "nginx.ingress.kubernetes.io/";

/// What one Ingress's annotations ask for. `None` / `false`: not set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Annotations {
    /// `auth-basic-secret` (+ `auth-basic-realm`); nginx `auth-type: basic`
    /// + `auth-secret` (+ `auth-realm`).
    pub basic_auth: Option<BasicAuthAnnotation>,
    /// `auth-jwt`: the name of a JwtAuth in the Ingress's namespace.
    pub jwt_auth: Option<String>,
    /// `max-body-size`; nginx `proxy-body-size`.
    pub max_body_size: Option<BodyLimit>,
    /// `compression`: a Compression resource, or its defaults.
    pub compression: Option<CompressionAnnotation>,
    /// `ip-access-control` (a resource) or `allowlist-source-range` /
    /// `denylist-source-range` (CIDR lists; nginx also
    /// `whitelist-source-range`).
    pub ip_access: Option<IpAccessAnnotation>,
    /// `trust-forwarded-for`: how many proxies in front of Coxswain append
    /// to `X-Forwarded-For` (the client address the CIDR lists judge).
    pub trust_forwarded_for: Option<u8>,
    /// `load-balancer`; nginx `load-balance` / `upstream-hash-by`.
    pub load_balancer: Option<Balancer>,
    /// `backend-protocol`.
    pub backend_protocol: Option<BackendProtocol>,
    /// `proxy-connect-timeout`, in milliseconds.
    pub connect_timeout_ms: Option<u64>,
    /// The longer of `proxy-read-timeout` and `proxy-send-timeout`, in
    /// milliseconds: the backend request timeout.
    pub backend_timeout_ms: Option<u64>,
    /// `rewrite-target`, with `use-regex`.
    pub rewrite_target: Option<String>,
    /// `use-regex`: paths are regular expressions (anchored at the start).
    pub use_regex: bool,
    /// `ssl-redirect`: plain HTTP to hosts this Ingress has TLS for is
    /// redirected to HTTPS.
    pub ssl_redirect: bool,
    /// `force-ssl-redirect`: plain HTTP is redirected to HTTPS for every host.
    pub force_ssl_redirect: bool,
    /// `enable-cors` and the `cors-*` settings.
    pub cors: Option<Cors>,
    /// `canary: "true"` and the `canary-*` settings.
    pub canary: Option<Canary>,
    /// Security annotations that are set but cannot be enforced (an
    /// invalid value, or a mechanism Coxswain refuses): this Ingress's
    /// rules must not serve unprotected.
    pub unenforceable: Vec<String>,
}

impl Annotations {
    /// Whether any setting is present (problems aside).
    pub fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }
}

/// Parses an Ingress's annotations. Problems name the annotation and its
/// value; annotations of other prefixes are not looked at.
pub fn parse(map: &BTreeMap<String, String>) -> (Annotations, Vec<AnnotationProblem>) {
    let mut r = reader::Reader::new(map);
    let mut out = Annotations::default();
    auth::parse(&mut r, &mut out);
    limits::parse(&mut r, &mut out);
    upstream::parse(&mut r, &mut out);
    rewrite::parse(&mut r, &mut out);
    cors::parse(&mut r, &mut out);
    canary::parse(&mut r, &mut out);
    refuse_unknown_security(&mut r, &mut out);
    let problems = r.finish();
    (out, problems)
}

/// An access-control annotation Coxswain does not implement (`auth-tls-*`,
/// `auth-signin`, `satisfy`, ...) asked for protection that would not be
/// there: it is refused like an invalid one, so the rules do not serve.
fn refuse_unknown_security(r: &mut reader::Reader<'_>, out: &mut Annotations) {
    for (key, name) in r.unread() {
        let security = name.starts_with("auth-") || name == "satisfy";
        if !security {
            continue;
        }
        let value = r.raw(&key).unwrap_or_default();
        r.problems.push(AnnotationProblem::Refused {
            name: key.clone(),
            value: value.to_string(),
            why: "an access-control annotation Coxswain does not implement; the rules answer 500 rather than serve unprotected".into(),
        });
        out.unenforceable.push(key);
    }
}
