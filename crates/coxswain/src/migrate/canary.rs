//! Canary Ingresses (ingress-nginx semantics, as the Ingress lowering
//! serves them): a canary's rule joins the older non-canary rule of the
//! same host and path, adding its backend; only its TLS hosts and
//! connection settings apply of the rest.

use coxswain_api::ObjectKey;
use coxswain_translate::annotations::Canary;

use super::annotations::Extras;
use super::convert::{Document, Migrated, Target};
use super::report::Report;

/// A canary Ingress's backend and how requests choose it.
#[derive(Clone, Debug)]
pub struct CanaryBackend {
    pub target: Target,
    pub canary: Canary,
}

/// Of a canary Ingress's annotations only the connection settings apply
/// (to its Services); its filters do not, as with the Ingress.
pub fn canary_only(key: &ObjectKey, extras: &Extras, report: &mut Report) -> Vec<Document> {
    if !extras.filters.is_empty() || extras.timeouts.is_some() || extras.redirect.is_some() {
        report.note(
            key,
            "annotations",
            "a canary Ingress's filters, timeouts and redirects are not applied (the main rule's are), as by the Ingress",
        );
    }
    extras
        .objects
        .iter()
        .filter(|o| o["kind"] == "CoxswainBackendPolicy")
        .map(|object| Document {
            file: format!("{}-{}", key.namespace, key.name),
            object: object.clone(),
        })
        .collect()
}

/// A canary Ingress adds its backends to the rules of the same host and
/// path of the Ingresses before it (ingress-nginx's canary semantics).
pub fn attach_canary(
    key: &ObjectKey,
    part: Migrated<'_>,
    canary: &Canary,
    migrated: &mut [Migrated<'_>],
    report: &mut Report,
) {
    for rule in part.rules {
        let main = migrated.iter_mut().find_map(|m| {
            let key = m.key;
            let found = m.rules.iter_mut().find(|r| {
                r.canary.is_none()
                    && r.host == rule.host
                    && r.kind == rule.kind
                    && r.path == rule.path
            })?;
            Some((key, found))
        });
        match main {
            Some((main_key, main)) => {
                report.note(
                    key,
                    &rule.at,
                    format!("joins the rule of Ingress {main_key} for this host and path"),
                );
                main.canary = Some(CanaryBackend {
                    target: rule.target,
                    canary: canary.clone(),
                });
            }
            None => report.lost(
                key,
                rule.at,
                "not migrated: no older non-canary Ingress serves this host and path (or another canary has it); the Ingress does not serve it either",
            ),
        }
    }
    if part.default_backend.is_some() {
        report.lost(
            key,
            "defaultBackend",
            "not migrated: a canary Ingress's default backend is not served",
        );
    }
}
