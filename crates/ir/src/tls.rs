//! TLS material for HTTPS listeners. The private key never leaves the
//! process through serialisation: it is written as a redacted marker
//! (except to the config stream, [`crate::reveal`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Marker written in place of a private key.
pub const REDACTED_KEY: &str = "<redacted>";

/// One certificate (chain + key) a Gateway listener presents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsCertificate {
    /// `namespace/name` of the Secret it came from (for logs).
    pub source: String,
    /// PEM certificate chain, leaf first.
    pub cert_chain_pem: String,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: PrivateKeyPem,
}

/// A PEM private key whose `Debug` and `Serialize` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKeyPem(pub Arc<str>);

impl fmt::Debug for PrivateKeyPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED_KEY)
    }
}

impl Serialize for PrivateKeyPem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if crate::reveal::is_revealing() {
            return s.serialize_str(&self.0);
        }
        s.serialize_str(REDACTED_KEY)
    }
}

impl<'de> Deserialize<'de> for PrivateKeyPem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| PrivateKeyPem(s.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_redacted_in_json_and_debug() {
        let cert = TlsCertificate {
            source: "ns/s".into(),
            cert_chain_pem: "CERT".into(),
            key_pem: PrivateKeyPem("SECRET-KEY".into()),
        };
        let json = serde_json::to_string(&cert).unwrap();
        assert!(!json.contains("SECRET-KEY"), "{json}");
        assert!(json.contains(REDACTED_KEY));
        assert!(!format!("{cert:?}").contains("SECRET-KEY"));
    }
}
