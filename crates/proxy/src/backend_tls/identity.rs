//! The client certificate a Gateway presents to TLS backends
//! (`spec.tls.backend.clientCertificateRef`).

use coxswain_ir::TlsCertificate;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[derive(Debug)]
pub struct BackendIdentity {
    /// The Secret it came from (for errors).
    pub source: String,
    chain: Vec<CertificateDer<'static>>,
    /// `Err` when the key does not parse: requests then fail rather than
    /// reach the backend without the certificate.
    key: Result<PrivateKeyDer<'static>, String>,
}

impl BackendIdentity {
    pub fn new(cert: &TlsCertificate) -> Self {
        let chain = CertificateDer::pem_slice_iter(cert.cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_default();
        let key = PrivateKeyDer::from_pem_slice(cert.key_pem.0.as_bytes())
            .map_err(|e| format!("client certificate {}: private key: {e}", cert.source));
        BackendIdentity {
            source: cert.source.clone(),
            chain,
            key,
        }
    }

    /// The chain and key, for one client config.
    pub fn material(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
        let key = self.key.as_ref().map_err(Clone::clone)?;
        if self.chain.is_empty() {
            return Err(format!(
                "client certificate {}: no certificate",
                self.source
            ));
        }
        Ok((self.chain.clone(), key.clone_key()))
    }
}
