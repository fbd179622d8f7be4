//! Client-certificate verification for listeners with frontend
//! validation: against the listener's CA bundles, required
//! (AllowValidOnly) or asked for but not required (AllowInsecureFallback).

use std::sync::Arc;

use coxswain_ir::{ClientValidation, ClientValidationMode};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, Error, RootCertStore, SignatureScheme};

/// The verifier a listener's TLS config uses, or why none can be built
/// (the listener then refuses connections rather than skip validation).
pub fn verifier(validation: &ClientValidation) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let strict = strict(validation)?;
    Ok(match validation.mode {
        ClientValidationMode::AllowValidOnly => strict,
        ClientValidationMode::AllowInsecureFallback => Arc::new(Lenient(strict)),
    })
}

/// The verifier that accepts only certificates from the CAs, whatever the
/// mode: what decides whether a fallback connection's certificate is an
/// identity.
pub fn strict(validation: &ClientValidation) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let mut roots = RootCertStore::empty();
    for bundle in &validation.ca_bundles {
        for cert in CertificateDer::pem_slice_iter(bundle.pem.as_bytes()) {
            let cert = cert.map_err(|e| format!("{}: {e}", bundle.source))?;
            roots
                .add(cert)
                .map_err(|e| format!("{}: {e}", bundle.source))?;
        }
    }
    let provider = Arc::new(ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())
}

/// Asks for a certificate and checks it, but lets the handshake complete
/// without one or with one that does not verify.
#[derive(Debug)]
struct Lenient(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for Lenient {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match self.0.verify_client_cert(end_entity, intermediates, now) {
            Ok(verified) => Ok(verified),
            Err(e) => {
                tracing::debug!(error = %e, "client certificate not valid; let in (AllowInsecureFallback)");
                Ok(ClientCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
