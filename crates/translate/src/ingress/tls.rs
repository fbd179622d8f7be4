//! The `tls` sections of our Ingresses: which certificate is presented for
//! which SNI. A host is served by the oldest Ingress naming it; an entry
//! without hosts presents its certificate for every other name.

use std::collections::BTreeMap;

use coxswain_api::{Ingress, ObjectKey, Snapshot};
use coxswain_ir::{Hostname, TlsCertificate};

use super::problem::IngressProblem;
use crate::gateway::tls::certificate_from;

/// Certificates by SNI hostname (`None`: every name no other entry has).
pub type Certificates = BTreeMap<Option<Hostname>, (TlsCertificate, ObjectKey)>;

/// Adds the TLS entries of `ingress` (in age order) to `certificates`.
pub fn collect(
    snapshot: &Snapshot,
    key: &ObjectKey,
    ingress: &Ingress,
    certificates: &mut Certificates,
    problems: &mut Vec<IngressProblem>,
) {
    let entries = ingress.spec.as_ref().and_then(|s| s.tls.as_deref());
    for (i, entry) in entries.unwrap_or_default().iter().enumerate() {
        let at = format!("tls[{i}]");
        let Some(secret_name) = entry.secret_name.as_deref() else {
            problems.push(IngressProblem::Tls {
                at,
                why: "no secretName: no certificate is presented for these hosts".into(),
            });
            continue;
        };
        let secret_key = ObjectKey::new(&key.namespace, secret_name);
        let certificate = match snapshot.secrets.get(&secret_key) {
            None => Err(format!("Secret {secret_key} not found")),
            Some(secret) => certificate_from(secret, &secret_key)
                .map_err(|why| format!("Secret {secret_key}: {why}")),
        };
        let certificate = match certificate {
            Ok(c) => c,
            Err(why) => {
                problems.push(IngressProblem::Tls { at, why });
                continue;
            }
        };
        let mut hosts: Vec<Option<Hostname>> = Vec::new();
        for host in entry.hosts.iter().flatten() {
            match Hostname::parse(host) {
                Ok(h) => hosts.push(Some(h)),
                Err(e) => problems.push(IngressProblem::InvalidHost {
                    at: at.clone(),
                    host: host.clone(),
                    why: e.to_string(),
                }),
            }
        }
        if entry.hosts.as_ref().is_none_or(Vec::is_empty) {
            hosts.push(None);
        }
        for host in hosts {
            match certificates.get(&host) {
                Some((taken, by)) if by != key && taken.source != certificate.source => {
                    problems.push(IngressProblem::TlsHostTaken {
                        at: at.clone(),
                        host: host.as_ref().map_or("*".to_string(), Hostname::to_string),
                        by: by.to_string(),
                    });
                }
                Some(_) => {}
                None => {
                    certificates.insert(host, (certificate.clone(), key.clone()));
                }
            }
        }
    }
}
