//! CoxswainExternalAuth: an authorization service asked about each
//! request before it goes upstream.

use serde::{Deserialize, Serialize};

/// Ask the service behind `cluster` (a cluster of [`crate::Config`]) to
/// allow or deny a request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalAuth {
    pub protocol: ExternalAuthProtocol,
    pub cluster: String,
    pub timeout_ms: u64,
    /// Deny (503) when the service cannot answer; false lets the request
    /// through. A cluster with no endpoints denies either way.
    pub fail_closed: bool,
    /// Lower-case names; empty: every client header is sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<String>,
    /// Lower-case names copied from an allowing answer onto the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<String>,
    /// Send the body, up to this many bytes (a larger one gets 413).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_max_bytes: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExternalAuthProtocol {
    /// Forward-auth: the request's method, Host, path and headers; a 2xx
    /// allows, any other answer is the client's.
    Http,
    /// `envoy.service.auth.v3.Authorization/Check`.
    Grpc,
}

impl ExternalAuth {
    /// Whether the client header `name` (lower case) goes to the service.
    pub fn sends_header(&self, name: &str) -> bool {
        self.request_headers.is_empty() || self.request_headers.iter().any(|h| h == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(request_headers: &[&str]) -> ExternalAuth {
        ExternalAuth {
            protocol: ExternalAuthProtocol::Http,
            cluster: "ns/auth:80".into(),
            timeout_ms: 1000,
            fail_closed: true,
            request_headers: request_headers.iter().map(|s| s.to_string()).collect(),
            response_headers: Vec::new(),
            body_max_bytes: None,
        }
    }

    #[test]
    fn every_header_is_sent_unless_a_list_is_given() {
        assert!(auth(&[]).sends_header("cookie"));
        let listed = auth(&["authorization", "x-test-auth"]);
        assert!(listed.sends_header("authorization"));
        assert!(!listed.sends_header("cookie"));
    }
}
