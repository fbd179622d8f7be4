//! Checks a backend's certificate the way a BackendTLSPolicy asks: the
//! chain must end at one of the trusted CAs, and the leaf must carry the
//! policy's hostname, or one of its `subjectAltNames` when it lists any
//! (a DNS name, or a URI compared exactly).

use std::sync::Arc;

use coxswain_ir::SubjectAltName;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// One name the backend's certificate may carry.
#[derive(Debug)]
enum Expected {
    Dns(ServerName<'static>),
    Uri(String),
}

#[derive(Debug)]
pub struct BackendVerifier {
    roots: Arc<RootCertStore>,
    expected: Vec<Expected>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl BackendVerifier {
    /// `hostname` is checked unless `alt_names` is not empty, in which case
    /// any one of those must match instead.
    pub fn new(
        roots: Arc<RootCertStore>,
        hostname: &str,
        alt_names: &[SubjectAltName],
        algorithms: WebPkiSupportedAlgorithms,
    ) -> Result<Self, String> {
        let dns = |name: &str| {
            ServerName::try_from(name.to_string())
                .map(Expected::Dns)
                .map_err(|e| format!("hostname {name:?}: {e}"))
        };
        let expected = if alt_names.is_empty() {
            vec![dns(hostname)?]
        } else {
            alt_names
                .iter()
                .map(|n| match n {
                    SubjectAltName::Hostname(h) => dns(h),
                    SubjectAltName::Uri(u) => Ok(Expected::Uri(u.clone())),
                })
                .collect::<Result<_, _>>()?
        };
        Ok(BackendVerifier {
            roots,
            expected,
            algorithms,
        })
    }

    fn name_matches(&self, cert: &ParsedCertificate<'_>, der: &CertificateDer<'_>) -> bool {
        let mut uris: Option<Vec<String>> = None;
        self.expected.iter().any(|expected| match expected {
            Expected::Dns(name) => verify_server_name(cert, name).is_ok(),
            Expected::Uri(uri) => uris.get_or_insert_with(|| uri_sans(der)).contains(uri),
        })
    }
}

/// The URI subject alternative names of a DER certificate (none when it
/// does not parse: the chain check has already accepted it, so that only
/// means no URI can match).
fn uri_sans(der: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, cert)) = X509Certificate::from_der(der.as_ref()) else {
        return Vec::new();
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::URI(uri) => Some((*uri).to_string()),
            _ => None,
        })
        .collect()
}

impl ServerCertVerifier for BackendVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algorithms.all,
        )?;
        if self.name_matches(&cert, end_entity) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
