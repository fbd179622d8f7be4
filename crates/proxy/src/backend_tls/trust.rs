//! The CAs a backend's certificate must chain to.

use std::sync::{Arc, OnceLock};

use coxswain_ir::{BackendTrust, CaBundle};
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub fn roots(trust: &BackendTrust) -> Result<Arc<RootCertStore>, String> {
    match trust {
        BackendTrust::CaBundles(bundles) => Ok(Arc::new(roots_from(bundles)?)),
        BackendTrust::System => system_roots(),
    }
}

fn roots_from(bundles: &[CaBundle]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for bundle in bundles {
        for cert in CertificateDer::pem_slice_iter(bundle.pem.as_bytes()) {
            let cert = cert.map_err(|e| format!("{}: {e}", bundle.source))?;
            roots
                .add(cert)
                .map_err(|e| format!("{}: {e}", bundle.source))?;
        }
    }
    if roots.is_empty() {
        return Err("no CA certificate".into());
    }
    Ok(roots)
}

/// The operating system's trust store, read once.
fn system_roots() -> Result<Arc<RootCertStore>, String> {
    static SYSTEM: OnceLock<Result<Arc<RootCertStore>, String>> = OnceLock::new();
    SYSTEM
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let errors: Vec<String> = found.errors.iter().map(|e| e.to_string()).collect();
                return Err(format!(
                    "no system CA certificates found ({})",
                    errors.join("; ")
                ));
            }
            Ok(Arc::new(roots))
        })
        .clone()
}
