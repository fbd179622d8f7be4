//! The stream's private certificate authority. The controller keeps one CA
//! (in a Secret, shared by its replicas), presents a server certificate it
//! issues itself, and issues each dedicated Gateway's pool a client
//! certificate naming that Gateway: the name in the certificate is the only
//! thing that decides which config a proxy receives.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use time::OffsetDateTime;

use crate::identity::GatewayIdentity;

/// File (and Secret key) names of a credentials directory.
pub const CA_FILE: &str = "ca.crt";
pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";

const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Leaf certificates (server and proxies). Renewed once two thirds of
/// this has passed, so a proxy always holds one with ten days left.
pub const LEAF_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);
/// Clock skew between the controller and the proxies' nodes.
const BACKDATE: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("cannot make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{what} is not a PEM certificate")]
    NotACertificate { what: &'static str },
    #[error("time {0:?} is out of range")]
    Time(SystemTime),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

/// A CA certificate, chain and key: what each end of the stream presents
/// and trusts.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

impl Credentials {
    /// Reads `ca.crt`, `tls.crt` and `tls.key` from `dir` (a mounted Secret).
    pub fn read_dir(dir: &std::path::Path) -> Result<Credentials, PkiError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| PkiError::Read {
                path: path.display().to_string(),
                source,
            })
        };
        Ok(Credentials {
            ca_pem: read(CA_FILE)?,
            cert_pem: read(CERT_FILE)?,
            key_pem: read(KEY_FILE)?,
        })
    }
}

pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    key_pem: String,
}

impl Authority {
    /// A new CA; its name carries a random suffix, so certificates of an
    /// earlier CA are told apart by their issuer.
    pub fn generate(now: SystemTime) -> Result<Authority, PkiError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let suffix: u64 = rand::random();
        params.distinguished_name.push(
            DnType::CommonName,
            format!("coxswain config stream CA {suffix:016x}"),
        );
        validity(&mut params, now, CA_LIFETIME)?;
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        let cert_pem = cert.pem();
        let key_pem = key.serialize_pem();
        Ok(Authority {
            issuer: Issuer::new(params, key),
            cert_pem,
            key_pem,
        })
    }

    /// The CA stored earlier (its Secret's `tls.crt` and `tls.key`).
    pub fn load(cert_pem: &str, key_pem: &str) -> Result<Authority, PkiError> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Authority {
            issuer,
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
        })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The controller's serving certificate for `server_name` (what the
    /// proxies dial).
    pub fn issue_server(
        &self,
        server_name: &str,
        now: SystemTime,
    ) -> Result<Credentials, PkiError> {
        let mut params = CertificateParams::new(vec![server_name.to_string()])?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params
            .distinguished_name
            .push(DnType::CommonName, server_name);
        self.issue(params, now)
    }

    /// A pool's client certificate: its URI SAN names the Gateway.
    pub fn issue_proxy(
        &self,
        gateway: &GatewayIdentity,
        now: SystemTime,
    ) -> Result<Credentials, PkiError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.subject_alt_names = vec![SanType::URI(gateway.uri().try_into()?)];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params
            .distinguished_name
            .push(DnType::CommonName, gateway.to_string());
        self.issue(params, now)
    }

    fn issue(
        &self,
        mut params: CertificateParams,
        now: SystemTime,
    ) -> Result<Credentials, PkiError> {
        validity(&mut params, now, LEAF_LIFETIME)?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Credentials {
            ca_pem: self.cert_pem.clone(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Should `cert_pem` be replaced: not ours (another CA, unreadable), or
    /// two thirds of its life gone?
    pub fn needs_renewal(&self, cert_pem: &str, now: SystemTime) -> bool {
        let Ok((_, ours)) = x509_parser::pem::parse_x509_pem(self.cert_pem.as_bytes()) else {
            return true;
        };
        let Ok(ours) = ours.parse_x509() else {
            return true;
        };
        let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()) else {
            return true;
        };
        let Ok(cert) = pem.parse_x509() else {
            return true;
        };
        if cert.issuer().as_raw() != ours.subject().as_raw() {
            return true;
        }
        let validity = cert.validity();
        let (start, end) = (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        );
        let renew_at = start + (end - start) * 2 / 3;
        unix(now) >= renew_at
    }
}

fn unix(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn validity(
    params: &mut CertificateParams,
    now: SystemTime,
    lifetime: Duration,
) -> Result<(), PkiError> {
    let at =
        |t: SystemTime| OffsetDateTime::from_unix_timestamp(unix(t)).map_err(|_| PkiError::Time(t));
    let start = now.checked_sub(BACKDATE).ok_or(PkiError::Time(now))?;
    let end = now.checked_add(lifetime).ok_or(PkiError::Time(now))?;
    params.not_before = at(start)?;
    params.not_after = at(end)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    #[test]
    fn a_stored_authority_issues_what_the_original_would_renew_on_schedule() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let ca = Authority::generate(t0).unwrap();
        let loaded = Authority::load(ca.cert_pem(), ca.key_pem()).unwrap();
        let gw = GatewayIdentity::new("team-a", "edge");
        let issued = loaded.issue_proxy(&gw, t0).unwrap();
        assert_eq!(issued.ca_pem, ca.cert_pem());
        assert!(!ca.needs_renewal(&issued.cert_pem, t0 + 19 * DAY));
        assert!(ca.needs_renewal(&issued.cert_pem, t0 + 21 * DAY));

        let other = Authority::generate(t0).unwrap();
        assert!(
            other.needs_renewal(&issued.cert_pem, t0),
            "a certificate of another CA is replaced"
        );
        assert!(ca.needs_renewal("not a certificate", t0));
    }
}
