//! A throwaway certificate authority for TLS tests.

use coxswain_ir::{PrivateKeyPem, TlsCertificate};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate the CA issued, in the forms tests need.
pub struct Issued {
    pub der: CertificateDer<'static>,
    pub key_der: PrivateKeyDer<'static>,
    /// Chain and key as the IR carries them.
    pub ir: TlsCertificate,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    fn issue(&self, mut params: CertificateParams, common_name: &str) -> Issued {
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            der: cert.der().clone(),
            key_der: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
            ir: TlsCertificate {
                source: format!("ns/{common_name}"),
                cert_chain_pem: cert.pem(),
                key_pem: PrivateKeyPem(key.serialize_pem().into()),
            },
        }
    }

    /// A client certificate (ClientAuth usage) and its key.
    pub fn client(&self) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let issued = self.client_named("client");
        (issued.der, issued.key_der)
    }

    pub fn client_named(&self, common_name: &str) -> Issued {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params, common_name)
    }

    /// A server certificate for DNS names `dns` and URIs `uris`.
    pub fn server(&self, dns: &[&str], uris: &[&str]) -> Issued {
        let names: Vec<String> = dns.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        for uri in uris {
            let uri = (*uri).try_into().unwrap();
            params.subject_alt_names.push(SanType::URI(uri));
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params, dns.first().copied().unwrap_or("server"))
    }
}
