//! The identity in a verified client certificate, for requests on that
//! connection: later filters read it, and `--forward-client-cert` passes
//! it to backends in `x-forwarded-client-cert` (Envoy's XFCC format).

use rustls::pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The header carrying it; any value a client sends is removed.
pub const X_FORWARDED_CLIENT_CERT: http::HeaderName =
    http::HeaderName::from_static("x-forwarded-client-cert");

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    /// SHA-256 of the DER certificate, lower-case hex.
    pub hash: String,
    /// The subject distinguished name (`CN=...,O=...`).
    pub subject: String,
    pub uris: Vec<String>,
    pub dns: Vec<String>,
}

impl ClientIdentity {
    /// The identity in `cert` (already verified by the caller); `None`
    /// when it does not parse.
    pub fn of(cert: &CertificateDer<'_>) -> Option<ClientIdentity> {
        let (_, parsed) = X509Certificate::from_der(cert.as_ref()).ok()?;
        let mut uris = Vec::new();
        let mut dns = Vec::new();
        if let Ok(Some(san)) = parsed.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::URI(u) => uris.push((*u).to_string()),
                    GeneralName::DNSName(d) => dns.push((*d).to_string()),
                    _ => {}
                }
            }
        }
        let hash = Sha256::digest(cert.as_ref())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(ClientIdentity {
            hash,
            subject: parsed.subject().to_string(),
            uris,
            dns,
        })
    }

    /// `Hash=...;Subject="...";URI=...;DNS=...` with `"` and `\` escaped
    /// in the subject.
    pub fn xfcc(&self) -> String {
        let subject = self.subject.replace('\\', "\\\\").replace('"', "\\\"");
        let mut out = format!("Hash={};Subject=\"{subject}\"", self.hash);
        for uri in &self.uris {
            out.push_str(";URI=");
            out.push_str(uri);
        }
        for name in &self.dns {
            out.push_str(";DNS=");
            out.push_str(name);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DnType, KeyPair, SanType};

    use super::*;

    #[test]
    fn subject_sans_and_hash_in_xfcc_form() {
        let mut params = CertificateParams::new(vec!["client.test".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "svc \"a\"");
        params
            .subject_alt_names
            .push(SanType::URI("spiffe://cluster/ns/a".try_into().unwrap()));
        let cert = params.self_signed(&KeyPair::generate().unwrap()).unwrap();
        let identity = ClientIdentity::of(cert.der()).unwrap();
        assert_eq!(identity.hash.len(), 64);
        assert_eq!(identity.dns, ["client.test"]);
        assert_eq!(identity.uris, ["spiffe://cluster/ns/a"]);
        let header = identity.xfcc();
        assert!(header.contains(r#"Subject="CN=svc \"a\"""#), "{header}");
        assert!(
            header.ends_with(";URI=spiffe://cluster/ns/a;DNS=client.test"),
            "{header}"
        );
    }
}
