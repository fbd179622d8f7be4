//! Authentication annotations: basic auth from an htpasswd Secret, JWT
//! through a JwtAuth resource, and external auth (refused).
//!
//! All of them are security settings: one that is set but cannot be
//! enforced lands in [`Annotations::unenforceable`], and the Ingress's
//! rules then answer 500 instead of serving unprotected.

use super::Annotations;
use super::problem::AnnotationProblem;
use super::reader::{Read, Reader, object_name};

/// Basic authentication: the users of the htpasswd file under the key
/// `auth` of a Secret in the Ingress's namespace labelled
/// `ingress.coxswain-labs.dev/auth-basic: "true"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BasicAuthAnnotation {
    pub secret: String,
    /// The challenge's realm; BasicAuth's default when unset.
    pub realm: Option<String>,
}

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    basic(r, out);
    match r.setting("auth-jwt", None, object_name) {
        Read::Valid(name) => out.jwt_auth = Some(name),
        Read::Invalid => out.unenforceable.push(key("auth-jwt")),
        Read::Unset => {}
    }
    external(r, out);
}

fn key(name: &str) -> String {
    format!("{}{name}", super::COXSWAIN_PREFIX)
}

fn nginx_key(name: &str) -> String {
    format!("{}{name}", super::NGINX_PREFIX)
}

fn basic(r: &mut Reader<'_>, out: &mut Annotations) {
    let ours = r.coxswain("auth-basic-secret").map(|v| (v, object_name(v)));
    let theirs = nginx_basic(r, out);
    let secret = match r.pick("auth-basic-secret", ours, theirs) {
        Read::Valid(secret) => Some(secret),
        Read::Invalid => {
            out.unenforceable.push(key("auth-basic-secret"));
            None
        }
        Read::Unset => None,
    };
    let realm = match r.setting("auth-basic-realm", Some("auth-realm"), realm) {
        Read::Valid(realm) => Some(realm),
        // A bad realm keeps the default one: the users are still checked.
        Read::Invalid | Read::Unset => None,
    };
    if let Some(secret) = secret {
        out.basic_auth = Some(BasicAuthAnnotation { secret, realm });
    }
}

/// nginx `auth-type: basic` + `auth-secret` (+ `auth-secret-type:
/// auth-file`), as `(annotation, value, Secret name)`.
fn nginx_basic<'a>(
    r: &mut Reader<'a>,
    out: &mut Annotations,
) -> Option<(&'static str, &'a str, Result<String, String>)> {
    let auth_type = r.nginx("auth-type");
    let secret = r.nginx("auth-secret");
    let secret_type = r.nginx("auth-secret-type");
    if auth_type.is_none() && secret.is_none() {
        return None;
    }
    let mut refuse = |r: &mut Reader<'_>, name: &str, value: &str, why: &str| {
        r.problems.push(AnnotationProblem::Refused {
            name: nginx_key(name),
            value: value.to_string(),
            why: why.to_string(),
        });
        out.unenforceable.push(nginx_key(name));
    };
    match auth_type {
        Some("basic") => {}
        Some(other) => {
            refuse(
                r,
                "auth-type",
                other,
                "only basic is supported; the rules are not served unprotected",
            );
            return None;
        }
        None => {
            let value = secret.unwrap_or_default();
            refuse(
                r,
                "auth-secret",
                value,
                "without auth-type: basic it asks for nothing Coxswain can enforce; the rules are not served unprotected",
            );
            return None;
        }
    }
    if let Some(t) = secret_type
        && t != "auth-file"
    {
        refuse(
            r,
            "auth-secret-type",
            t,
            "only auth-file (an htpasswd file under the key auth) is supported",
        );
        return None;
    }
    let Some(value) = secret else {
        r.invalid(
            nginx_key("auth-type"),
            "basic",
            "auth-type basic needs auth-secret",
        );
        out.unenforceable.push(nginx_key("auth-type"));
        return None;
    };
    // nginx allows `namespace/name`; only the Ingress's own namespace is
    // readable without a ReferenceGrant, so a bare name is all we take.
    Some(("auth-secret", value, object_name(value)))
}

fn realm(value: &str) -> Result<String, String> {
    if crate::extension::valid_realm(value) {
        Ok(value.to_string())
    } else {
        Err("at most 256 characters, no quote, backslash or control character".into())
    }
}

/// `auth-url` asks another service over HTTP by URL; Coxswain's external
/// authorization names a Service through CoxswainExternalAuth instead, so
/// the annotation is refused and the rules are not served unprotected.
fn external(r: &mut Reader<'_>, out: &mut Annotations) {
    let why = "external authorization by URL is not supported: use an HTTPRoute with a CoxswainExternalAuth filter; the rules answer 500";
    for (key, value) in [
        (key("auth-url"), r.coxswain("auth-url")),
        (nginx_key("auth-url"), r.nginx("auth-url")),
    ] {
        if let Some(value) = value {
            r.problems.push(AnnotationProblem::Refused {
                name: key.clone(),
                value: value.to_string(),
                why: why.to_string(),
            });
            out.unenforceable.push(key);
        }
    }
}
