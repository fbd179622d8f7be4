//! CA certificates referenced by Gateways (frontend validation) and
//! BackendTLSPolicies: key `ca.crt` of a core ConfigMap or (an extension)
//! Secret, which must hold at least one PEM certificate.

use std::sync::Arc;

use coxswain_api::{ConfigMap, ObjectKey, Secret, Snapshot};
use coxswain_ir::CaBundle;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// The core kinds that can hold CA certificates, by (group, kind).
pub fn holder_kind(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("", "ConfigMap") => Some("ConfigMap"),
        ("", "Secret") => Some("Secret"),
        _ => None,
    }
}

/// The bundle in `kind` `key` (a kind [`holder_kind`] returned), or why
/// there is none usable.
pub fn load(snapshot: &Snapshot, kind: &str, key: &ObjectKey) -> Result<CaBundle, String> {
    let pem = match kind {
        "ConfigMap" => snapshot.config_maps.get(key).map(|c| config_map_ca(c)),
        _ => snapshot.secrets.get(key).map(|s| secret_ca(s)),
    };
    let Some(pem) = pem else {
        return Err(format!("{kind} {key} not found"));
    };
    let pem = pem
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| format!("{kind} {key} has no ca.crt"))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{kind} {key}: ca.crt is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{kind} {key}: ca.crt holds no certificate"));
    }
    Ok(CaBundle {
        source: format!("{kind} {key}"),
        pem: Arc::from(pem.as_str()),
    })
}

fn config_map_ca(c: &ConfigMap) -> Option<String> {
    let text = c.data.as_ref().and_then(|d| d.get("ca.crt")).cloned();
    let binary = || {
        c.binary_data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
    };
    text.or_else(binary)
}

fn secret_ca(s: &Secret) -> Option<String> {
    let data = s
        .data
        .as_ref()
        .and_then(|d| d.get("ca.crt"))
        .and_then(|b| String::from_utf8(b.0.clone()).ok());
    let string_data = || {
        s.string_data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .cloned()
    };
    data.or_else(string_data)
}
