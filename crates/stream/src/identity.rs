//! Who is on the other end: the Gateway a proxy's client certificate was
//! issued for, carried as a URI SAN `spiffe://coxswain/ns/<ns>/gateway/<name>`.

use std::fmt;

use x509_parser::extensions::GeneralName;

const PREFIX: &str = "spiffe://coxswain/ns/";

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GatewayIdentity {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for GatewayIdentity {
    /// `namespace/name`, as the IR's `Listener::gateway`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("the client presented no certificate")]
    NoCertificate,
    #[error("the client certificate cannot be parsed")]
    Unparsable,
    #[error("the client certificate names no Gateway (URI SAN {PREFIX}<ns>/gateway/<name>)")]
    NoGateway,
}

impl GatewayIdentity {
    pub fn new(namespace: &str, name: &str) -> GatewayIdentity {
        GatewayIdentity {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    pub fn uri(&self) -> String {
        format!("{PREFIX}{}/gateway/{}", self.namespace, self.name)
    }

    pub fn from_uri(uri: &str) -> Option<GatewayIdentity> {
        let (namespace, name) = uri.strip_prefix(PREFIX)?.split_once("/gateway/")?;
        let label = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        (label(namespace) && label(name)).then(|| GatewayIdentity::new(namespace, name))
    }

    /// The Gateway named by a (verified) certificate.
    pub fn from_certificate(der: &[u8]) -> Result<GatewayIdentity, IdentityError> {
        let (_, cert) =
            x509_parser::parse_x509_certificate(der).map_err(|_| IdentityError::Unparsable)?;
        let san = cert
            .subject_alternative_name()
            .map_err(|_| IdentityError::Unparsable)?
            .ok_or(IdentityError::NoGateway)?;
        san.value
            .general_names
            .iter()
            .find_map(|name| match name {
                GeneralName::URI(uri) => GatewayIdentity::from_uri(uri),
                _ => None,
            })
            .ok_or(IdentityError::NoGateway)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_odd_ones_name_nobody() {
        let gw = GatewayIdentity::new("team-a", "edge");
        assert_eq!(GatewayIdentity::from_uri(&gw.uri()), Some(gw.clone()));
        assert_eq!(gw.to_string(), "team-a/edge");
        for bad in [
            "spiffe://coxswain/ns//gateway/x",
            "spiffe://coxswain/ns/a/gateway/",
            "spiffe://coxswain/ns/a/b/gateway/c",
            "spiffe://other/ns/a/gateway/b",
            "spiffe://coxswain/ns/A/gateway/b",
        ] {
            assert_eq!(GatewayIdentity::from_uri(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_certificate_without_a_gateway_uri_names_nobody() {
        let plain = rcgen::generate_simple_self_signed(vec!["x.test".to_string()]).unwrap();
        assert_eq!(
            GatewayIdentity::from_certificate(plain.cert.der()),
            Err(IdentityError::NoGateway)
        );
        assert_eq!(
            GatewayIdentity::from_certificate(b"junk"),
            Err(IdentityError::Unparsable)
        );
    }
}
