//! BasicAuth: the users of the htpasswd file in the Secret it names.
//!
//! Everything that keeps the filter from being enforced as written fails
//! closed — its rules answer 503 — and the resource's status says why: a
//! Secret that is missing, in another namespace without a ReferenceGrant,
//! without the `ingress.coxswain-labs.dev/auth-basic: "true"` label or the
//! `auth` key, or an htpasswd file with any line we cannot check.

use coxswain_api::{BasicAuth, ObjectKey, Snapshot};
use coxswain_ir::{BasicAuthUser, ExtensionSpec, PasswordScheme};

use super::htpasswd;
use super::{Resolved, accepted, invalid};
use crate::conditions::{Cond, ConditionType, Reason};
use crate::reference_grant::{From, To, is_permitted};

/// The label a Secret must carry to be read as an htpasswd file.
pub const SECRET_LABEL: &str = "ingress.coxswain-labs.dev/auth-basic";
/// The Secret key holding the file (nginx's convention).
pub const SECRET_KEY: &str = "auth";
const DEFAULT_REALM: &str = "Restricted";

pub fn resolve(snapshot: &Snapshot, cr: &BasicAuth) -> Resolved {
    let namespace = cr.metadata.namespace.as_deref().unwrap_or("default");
    match users(snapshot, namespace, cr) {
        Ok(users) => {
            let weak = users
                .iter()
                .filter(|u| u.hash.scheme == PasswordScheme::Sha1)
                .count();
            let mut conditions = accepted();
            if weak > 0
                && let Some(c) = conditions.first_mut()
            {
                *c = Cond::new(
                    ConditionType::Accepted,
                    true,
                    Reason::Accepted,
                    format!(
                        "enforced; {weak} user(s) have unsalted {{SHA}} hashes, which are weak: prefer bcrypt"
                    ),
                );
            }
            Resolved {
                spec: ExtensionSpec::BasicAuth(coxswain_ir::BasicAuth {
                    realm: cr
                        .spec
                        .realm
                        .clone()
                        .filter(|r| valid_realm(r))
                        .unwrap_or_else(|| DEFAULT_REALM.into()),
                    forward_credentials: cr.spec.forward_credentials,
                    users,
                }),
                conditions,
            }
        }
        Err((conditions, message)) => Resolved {
            spec: ExtensionSpec::Broken {
                status: 503,
                reason: message,
            },
            conditions,
        },
    }
}

/// A realm the challenge can quote as is.
pub fn valid_realm(realm: &str) -> bool {
    realm.len() <= 256
        && !realm
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control())
}

type Refusal = (Vec<Cond>, String);

fn users(
    snapshot: &Snapshot,
    namespace: &str,
    cr: &BasicAuth,
) -> Result<Vec<BasicAuthUser>, Refusal> {
    if let Some(realm) = &cr.spec.realm
        && !valid_realm(realm)
    {
        let m = "spec.realm: at most 256 characters, no quote, backslash or control character";
        return Err((invalid(m.into()), m.into()));
    }
    let reference = &cr.spec.secret_ref;
    let secret_ns = reference.namespace.as_deref().unwrap_or(namespace);
    let from = From {
        group: super::GROUP,
        kind: "BasicAuth",
        namespace,
    };
    let to = To {
        group: "",
        kind: "Secret",
        namespace: secret_ns,
        name: &reference.name,
    };
    let key = ObjectKey::new(secret_ns, &reference.name);
    if !is_permitted(&snapshot.reference_grants, from, to) {
        let m = format!(
            "Secret {key}: no ReferenceGrant in {secret_ns} lets BasicAuth in {namespace} read it"
        );
        return Err((unresolved(Reason::RefNotPermitted, &m), m));
    }
    let Some(secret) = snapshot.secrets.get(&key) else {
        let m = format!("Secret {key} not found");
        return Err((unresolved(Reason::InvalidSecretRef, &m), m));
    };
    let labelled = secret
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SECRET_LABEL))
        .is_some_and(|v| v == "true");
    if !labelled {
        let m = format!("Secret {key} lacks the label {SECRET_LABEL}: \"true\"");
        return Err((unresolved(Reason::InvalidSecretRef, &m), m));
    }
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(SECRET_KEY))
        .map(|b| b.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(SECRET_KEY))
                .map(|s| s.clone().into_bytes())
        });
    let Some(file) = data else {
        let m = format!("Secret {key} has no key {SECRET_KEY:?}");
        return Err((unresolved(Reason::InvalidSecretRef, &m), m));
    };
    htpasswd::parse(&file).map_err(|e| {
        let m = format!("Secret {key}: {e}");
        (invalid(m.clone()), m)
    })
}

/// A reference that does not resolve: not enforced, and why.
fn unresolved(reason: Reason, message: &str) -> Vec<Cond> {
    vec![
        Cond::new(
            ConditionType::Accepted,
            false,
            Reason::Invalid,
            "its Secret cannot be used: the rules using it answer 503",
        ),
        Cond::new(
            ConditionType::ResolvedRefs,
            false,
            reason,
            message.to_string(),
        ),
    ]
}
