//! Listener certificates and client-certificate verifiers, parsed once per
//! distinct certificate (or CA set) per config: a thousand listeners
//! sharing one wildcard certificate hold one parsed copy of it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use coxswain_ir::{ClientValidation, ClientValidationMode, TlsCertificate};
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::sign::CertifiedKey;

use super::client_auth;

/// A certificate by its PEM chain and key.
type KeyId = (String, Arc<str>);

/// A CA set by the addresses of its shared PEM bundles, and the mode.
type VerifierKey = (Vec<usize>, ClientValidationMode);

/// Built during one compile (single-threaded); dropped with it.
#[derive(Default)]
pub struct Certificates {
    keys: RefCell<HashMap<KeyId, Arc<CertifiedKey>>>,
    verifiers: RefCell<HashMap<VerifierKey, Arc<dyn ClientCertVerifier>>>,
}

impl Certificates {
    /// The parsed certificate, shared with every listener presenting it.
    pub fn key(&self, cert: &TlsCertificate) -> Result<Arc<CertifiedKey>, String> {
        let id: KeyId = (cert.cert_chain_pem.clone(), cert.key_pem.0.clone());
        if let Some(found) = self.keys.borrow().get(&id) {
            return Ok(found.clone());
        }
        let parsed = Arc::new(certified_key(cert)?);
        self.keys.borrow_mut().insert(id, parsed.clone());
        Ok(parsed)
    }

    /// The verifier for `validation`, shared by listeners with the same CAs
    /// and mode.
    pub fn verifier(
        &self,
        validation: &ClientValidation,
    ) -> Result<Arc<dyn ClientCertVerifier>, String> {
        let id: VerifierKey = (
            validation
                .ca_bundles
                .iter()
                .map(|b| Arc::as_ptr(&b.pem).cast::<u8>() as usize)
                .collect(),
            validation.mode,
        );
        if let Some(found) = self.verifiers.borrow().get(&id) {
            return Ok(found.clone());
        }
        let built = client_auth::verifier(validation)?;
        self.verifiers.borrow_mut().insert(id, built.clone());
        Ok(built)
    }

    #[cfg(test)]
    fn parsed(&self) -> usize {
        self.keys.borrow().len()
    }
}

fn certified_key(cert: &TlsCertificate) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert.cert_chain_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("certificate chain: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.0.as_bytes())
        .map_err(|e| format!("private key: {e}"))?;
    let signer = ring::default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("private key: {e}"))?;
    Ok(CertifiedKey::new(chain, signer))
}

#[cfg(test)]
mod tests {
    use coxswain_ir::PrivateKeyPem;

    use super::*;

    fn cert(name: &str) -> TlsCertificate {
        let generated = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        TlsCertificate {
            source: format!("ns/{name}"),
            cert_chain_pem: generated.cert.pem(),
            key_pem: PrivateKeyPem(generated.signing_key.serialize_pem().into()),
        }
    }

    #[test]
    fn listeners_sharing_a_certificate_share_one_parsed_copy() {
        let certificates = Certificates::default();
        let (shared, other) = (cert("a.test"), cert("b.test"));
        let first = certificates.key(&shared).unwrap();
        // Another listener's copy of the same Secret's certificate.
        let again = certificates.key(&shared.clone()).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let different = certificates.key(&other).unwrap();
        assert!(!Arc::ptr_eq(&first, &different));
        assert_eq!(certificates.parsed(), 2);
    }
}
