//! CORS (GEP-1767): preflight requests are answered by the gateway, and an
//! allowed origin's actual requests get the CORS response headers.
//!
//! - A preflight (`OPTIONS` with `Origin` and
//!   `Access-Control-Request-Method`) never reaches the backend: 204, with
//!   the CORS headers when the origin is allowed and without them when not
//!   (the browser then refuses the request).
//! - `Access-Control-Allow-Origin` echoes the request's origin (with
//!   `Vary: Origin`), except `*` for a wildcard policy without credentials.
//! - A `*` method or header list is echoed from the preflight when
//!   credentials are allowed (the Fetch standard reads `*` literally then),
//!   and sent as `*` otherwise.

use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode};

use coxswain_ir::Cors;

use crate::http::body::{ProxyBody, plain};

/// A compiled CORS policy.
#[derive(Debug)]
pub struct CorsPolicy {
    any_origin: bool,
    origins: Vec<OriginPattern>,
    methods: List,
    headers: List,
    expose: List,
    credentials: bool,
    max_age: HeaderValue,
}

/// A configured list: `*`, or values joined for the header (`None`: empty).
#[derive(Debug)]
enum List {
    Any,
    Values(Option<HeaderValue>),
}

impl List {
    fn compile(values: &[String]) -> List {
        if values.iter().any(|v| v == "*") {
            return List::Any;
        }
        let joined = values.join(", ");
        List::Values(
            HeaderValue::from_str(&joined)
                .ok()
                .filter(|_| !values.is_empty()),
        )
    }

    /// The header value: `*`, or what the request asked for when `*` may
    /// not be used (credentials), or the configured values.
    fn value(&self, credentials: bool, asked: Option<&HeaderValue>) -> Option<HeaderValue> {
        match self {
            List::Any if credentials => asked.cloned(),
            List::Any => Some(HeaderValue::from_static("*")),
            List::Values(v) => v.clone(),
        }
    }
}

/// An origin: scheme, lower-case host and port (the scheme's default when
/// not given).
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

fn parse_origin(value: &str) -> Option<Origin> {
    let (scheme, rest) = value.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (rest, default),
    };
    (!host.is_empty()).then(|| Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// A configured origin: exact, or a host wildcard `*` matching one or
/// more labels to the left of the rest (`*.bar.com`: `a.b.bar.com`).
#[derive(Debug)]
struct OriginPattern {
    origin: Origin,
    /// The host after a leading `*` (e.g. `.bar.com`), when wildcarded.
    wildcard: bool,
}

impl OriginPattern {
    fn matches(&self, o: &Origin) -> bool {
        let p = &self.origin;
        if p.scheme != o.scheme || p.port != o.port {
            return false;
        }
        if !self.wildcard {
            return p.host == o.host;
        }
        o.host.len() > p.host.len() && o.host.ends_with(&p.host)
    }
}

impl CorsPolicy {
    pub fn compile(c: &Cors) -> CorsPolicy {
        let origins = c
            .allow_origins
            .iter()
            .filter(|o| *o != "*")
            .filter_map(|o| {
                let wildcard = o.contains("://*");
                let origin = parse_origin(&o.replacen("://*", "://", 1))?;
                Some(OriginPattern { origin, wildcard })
            })
            .collect();
        CorsPolicy {
            any_origin: c.allow_origins.iter().any(|o| o == "*"),
            origins,
            methods: List::compile(&c.allow_methods),
            headers: List::compile(&c.allow_headers),
            expose: List::compile(&c.expose_headers),
            credentials: c.allow_credentials,
            max_age: HeaderValue::from(c.max_age_s),
        }
    }

    /// Is this request a CORS preflight?
    pub fn is_preflight(method: &Method, headers: &HeaderMap) -> bool {
        method == Method::OPTIONS
            && headers.contains_key(ORIGIN)
            && headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
    }

    /// The request's origin, when this policy allows it.
    fn allowed<'h>(&self, headers: &'h HeaderMap) -> Option<&'h HeaderValue> {
        let value = headers.get(ORIGIN)?;
        if self.any_origin {
            return Some(value);
        }
        let origin = parse_origin(value.to_str().ok()?)?;
        self.origins
            .iter()
            .any(|p| p.matches(&origin))
            .then_some(value)
    }

    /// The headers every answer to an allowed origin carries.
    fn common(&self, origin: &HeaderValue, out: &mut Vec<(HeaderName, HeaderValue)>) {
        if self.any_origin && !self.credentials {
            out.push((ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")));
        } else {
            out.push((ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone()));
            out.push((VARY, HeaderValue::from_static("Origin")));
        }
        if self.credentials {
            out.push((
                ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            ));
        }
        if let Some(expose) = self.expose.value(self.credentials, None) {
            out.push((ACCESS_CONTROL_EXPOSE_HEADERS, expose));
        }
    }

    /// The gateway's answer to a preflight.
    pub fn preflight(&self, headers: &HeaderMap) -> Response<ProxyBody> {
        let mut response = plain(StatusCode::NO_CONTENT, "");
        response.headers_mut().remove(http::header::CONTENT_TYPE);
        let Some(origin) = self.allowed(headers) else {
            return response;
        };
        let mut add = Vec::new();
        self.common(origin, &mut add);
        let asked_method = headers.get(ACCESS_CONTROL_REQUEST_METHOD);
        if let Some(methods) = self.methods.value(self.credentials, asked_method) {
            add.push((ACCESS_CONTROL_ALLOW_METHODS, methods));
        }
        let asked_headers = headers.get(ACCESS_CONTROL_REQUEST_HEADERS);
        if let Some(allowed) = self.headers.value(self.credentials, asked_headers) {
            add.push((ACCESS_CONTROL_ALLOW_HEADERS, allowed));
        }
        add.push((ACCESS_CONTROL_MAX_AGE, self.max_age.clone()));
        let out = response.headers_mut();
        for (name, value) in add {
            out.append(name, value);
        }
        response
    }

    /// The headers to add to the response of an actual (non-preflight)
    /// request; empty when it has no allowed origin.
    pub fn response_headers(&self, request: &HeaderMap) -> Vec<(HeaderName, HeaderValue)> {
        let mut add = Vec::new();
        if let Some(origin) = self.allowed(request) {
            self.common(origin, &mut add);
        }
        add
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(origins: &[&str], credentials: bool) -> CorsPolicy {
        CorsPolicy::compile(&Cors {
            allow_origins: origins.iter().map(|o| o.to_string()).collect(),
            allow_methods: vec!["GET".into(), "OPTIONS".into()],
            allow_headers: vec!["*".into()],
            expose_headers: vec!["x-trace".into()],
            allow_credentials: credentials,
            max_age_s: 600,
        })
    }

    fn request(origin: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ORIGIN, HeaderValue::from_str(origin).unwrap());
        h.insert(
            ACCESS_CONTROL_REQUEST_METHOD,
            HeaderValue::from_static("GET"),
        );
        h.insert(
            ACCESS_CONTROL_REQUEST_HEADERS,
            HeaderValue::from_static("x-a, x-b"),
        );
        h
    }

    #[test]
    fn origins_match_exactly_by_wildcard_and_default_port() {
        let p = policy(
            &[
                "https://www.foo.com",
                "https://*.bar.com",
                "http://x.com:8080",
            ],
            false,
        );
        for allowed in [
            "https://www.foo.com",
            "https://WWW.foo.com:443",
            "https://a.bar.com",
            "https://a.b.bar.com",
            "http://x.com:8080",
        ] {
            assert!(p.allowed(&request(allowed)).is_some(), "{allowed}");
        }
        for denied in [
            "http://www.foo.com",
            "https://foobar.com",
            "https://bar.com",
            "https://www.foo.com:8443",
            "http://x.com",
            "null",
        ] {
            assert!(p.allowed(&request(denied)).is_none(), "{denied}");
        }
    }

    #[test]
    fn preflight_of_an_allowed_origin_carries_every_header() {
        let p = policy(&["https://www.foo.com"], true);
        let r = p.preflight(&request("https://www.foo.com"));
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        let h = r.headers();
        assert_eq!(h[ACCESS_CONTROL_ALLOW_ORIGIN], "https://www.foo.com");
        assert_eq!(h[ACCESS_CONTROL_ALLOW_METHODS], "GET, OPTIONS");
        assert_eq!(
            h[ACCESS_CONTROL_ALLOW_HEADERS], "x-a, x-b",
            "* echoed with credentials"
        );
        assert_eq!(h[ACCESS_CONTROL_ALLOW_CREDENTIALS], "true");
        assert_eq!(h[ACCESS_CONTROL_EXPOSE_HEADERS], "x-trace");
        assert_eq!(h[ACCESS_CONTROL_MAX_AGE], "600");
        assert_eq!(h[VARY], "Origin");
    }

    #[test]
    fn wildcard_without_credentials_answers_star_and_denied_gets_nothing() {
        let p = policy(&["*"], false);
        let r = p.preflight(&request("https://foobar.com:12345"));
        assert_eq!(r.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(r.headers()[ACCESS_CONTROL_ALLOW_HEADERS], "*");
        assert!(!r.headers().contains_key(ACCESS_CONTROL_ALLOW_CREDENTIALS));
        let strict = policy(&["https://www.foo.com"], false);
        let denied = strict.preflight(&request("https://evil.com"));
        assert_eq!(denied.status(), StatusCode::NO_CONTENT);
        assert!(!denied.headers().contains_key(ACCESS_CONTROL_ALLOW_ORIGIN));
        assert!(
            strict
                .response_headers(&request("https://evil.com"))
                .is_empty()
        );
    }

    #[test]
    fn wildcard_with_credentials_echoes_the_origin() {
        let p = policy(&["*"], true);
        let added = p.response_headers(&request("https://other.foo.com"));
        assert!(added.contains(&(
            ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("https://other.foo.com")
        )));
        assert!(added.contains(&(
            ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true")
        )));
    }

    #[test]
    fn only_options_with_origin_and_request_method_is_a_preflight() {
        let h = request("https://a.com");
        assert!(CorsPolicy::is_preflight(&Method::OPTIONS, &h));
        assert!(!CorsPolicy::is_preflight(&Method::GET, &h));
        assert!(!CorsPolicy::is_preflight(
            &Method::OPTIONS,
            &HeaderMap::new()
        ));
    }
}
