use std::fmt;

use serde::{Deserialize, Serialize};

/// A lower-case DNS name, or a wildcard `*.suffix` that matches one or more
/// leading labels (Gateway API semantics: `*.example.com` matches
/// `a.example.com` and `a.b.example.com`, never `example.com`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Hostname(String);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostnameError(pub String);

impl fmt::Display for HostnameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostnameError {}

impl Hostname {
    /// Validates a Gateway API hostname (RFC 1123 subdomain, optionally with a
    /// leading `*.` label; no IP addresses, no ports).
    pub fn parse(value: &str) -> Result<Self, HostnameError> {
        let lower = value.to_ascii_lowercase();
        let body = lower.strip_prefix("*.").unwrap_or(&lower);
        if body.is_empty() || body.len() > 253 {
            return Err(HostnameError(format!(
                "hostname {value:?} is empty or too long"
            )));
        }
        for label in body.split('.') {
            let valid = !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-');
            if !valid {
                return Err(HostnameError(format!(
                    "hostname {value:?} is not a valid DNS name (label {label:?})"
                )));
            }
        }
        if body.parse::<std::net::IpAddr>().is_ok()
            || body.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        {
            return Err(HostnameError(format!(
                "hostname {value:?} must not be an IP address"
            )));
        }
        Ok(Hostname(lower))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_wildcard(&self) -> bool {
        self.0.starts_with("*.")
    }

    /// For `*.example.com` returns `.example.com`; `None` for exact names.
    pub fn wildcard_suffix(&self) -> Option<&str> {
        self.0.strip_prefix('*')
    }

    /// Does a request host (already lower-cased, without port) match?
    pub fn matches(&self, host: &str) -> bool {
        match self.wildcard_suffix() {
            Some(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
            None => self.0 == host,
        }
    }

    /// Does a request host match with classic Ingress semantics, where a
    /// wildcard stands for exactly one label?
    pub fn matches_one_label(&self, host: &str) -> bool {
        match self.wildcard_suffix() {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
            None => self.0 == host,
        }
    }

    /// The Gateway API intersection of a listener hostname and a route
    /// hostname: the more specific of the two when one covers the other.
    pub fn intersect(listener: &Hostname, route: &Hostname) -> Option<Hostname> {
        match (listener.is_wildcard(), route.is_wildcard()) {
            (false, false) => (listener == route).then(|| route.clone()),
            (true, false) => listener.matches(route.as_str()).then(|| route.clone()),
            (false, true) => route.matches(listener.as_str()).then(|| listener.clone()),
            (true, true) => {
                let (l, r) = (listener.as_str(), route.as_str());
                if l == r || route.matches(&l[2..]) {
                    Some(listener.clone())
                } else if listener.matches(&r[2..]) {
                    Some(route.clone())
                } else {
                    None
                }
            }
        }
    }
}

impl TryFrom<String> for Hostname {
    type Error = HostnameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Hostname::parse(&value)
    }
}

impl From<Hostname> for String {
    fn from(h: Hostname) -> String {
        h.0
    }
}

impl fmt::Display for Hostname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn wildcard_matches_any_number_of_labels() {
        assert!(h("*.example.com").matches("a.example.com"));
        assert!(h("*.example.com").matches("a.b.example.com"));
        assert!(!h("*.example.com").matches("example.com"));
        assert!(!h("*.example.com").matches("aexample.com"));
    }

    #[test]
    fn one_label_wildcard_matches_exactly_one_label() {
        assert!(h("*.example.com").matches_one_label("a.example.com"));
        assert!(!h("*.example.com").matches_one_label("a.b.example.com"));
        assert!(!h("*.example.com").matches_one_label("example.com"));
        assert!(!h("*.example.com").matches_one_label(".example.com"));
        assert!(h("a.example.com").matches_one_label("a.example.com"));
    }

    #[test]
    fn intersection_picks_the_more_specific() {
        assert_eq!(
            Hostname::intersect(&h("*.example.com"), &h("a.example.com")),
            Some(h("a.example.com"))
        );
        assert_eq!(
            Hostname::intersect(&h("a.example.com"), &h("*.example.com")),
            Some(h("a.example.com"))
        );
        assert_eq!(
            Hostname::intersect(&h("*.example.com"), &h("*.a.example.com")),
            Some(h("*.a.example.com"))
        );
        assert_eq!(
            Hostname::intersect(&h("*.a.example.com"), &h("*.example.com")),
            Some(h("*.a.example.com"))
        );
        assert_eq!(
            Hostname::intersect(&h("*.example.com"), &h("*.example.com")),
            Some(h("*.example.com"))
        );
        assert_eq!(
            Hostname::intersect(&h("a.example.com"), &h("b.example.com")),
            None
        );
        assert_eq!(
            Hostname::intersect(&h("*.example.com"), &h("*.example.net")),
            None
        );
    }

    #[test]
    fn rejects_invalid_names() {
        for bad in [
            "", "*", "a..b", "-a.com", "1.2.3.4", "a_b.com", "*.*.com", "a.com:80",
        ] {
            assert!(Hostname::parse(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(h("Foo.Example.COM").as_str(), "foo.example.com");
    }
}
