//! The request to explain, written as for curl: `[METHOD] URL`, `-H`
//! headers, and the TLS server name a client would send.

use std::net::IpAddr;

use coxswain_proxy::PathOptions;
use coxswain_proxy::http::normalize::{PathError, normalize_path};
use coxswain_proxy::router::host::{MAX_HOST_LEN, normalize_host};
use http::header::HOST;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

/// Why the request cannot be explained.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("give the request as `[METHOD] URL`")]
    Shape,
    #[error("{0:?} is not an HTTP method")]
    Method(String),
    #[error("{url:?} is not a URL: {reason}")]
    Url { url: String, reason: String },
    #[error("{url:?}: the scheme must be http or https")]
    Scheme { url: String },
    #[error("{url:?} names no host")]
    NoHost { url: String },
    #[error("header {0:?} is not `name: value`")]
    Header(String),
}

/// A request as the proxy sees it once it arrived.
#[derive(Debug)]
pub struct ExplainRequest {
    pub method: Method,
    pub https: bool,
    pub url: String,
    /// The URL's host, as the client connects to it.
    pub url_host: String,
    pub port: u16,
    /// The Host the proxy routes on (a `-H 'Host: …'` wins over the URL),
    /// normalised as the proxy does.
    pub host: String,
    /// The path as the proxy normalises it, or why it answers 400.
    pub path: Result<String, PathError>,
    pub raw_path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The TLS server name (https only): `--sni`, else the URL's host
    /// unless it is an IP address (curl sends none for those).
    pub sni: Option<String>,
}

/// Lower-cases and strips the port and trailing dot, as the proxy does.
pub fn normalized_host(raw: &str) -> String {
    let mut buf = [0u8; MAX_HOST_LEN];
    normalize_host(raw, &mut buf).to_string()
}

fn is_ip_literal(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok()
}

fn parse_header(raw: &str) -> Result<(HeaderName, HeaderValue), RequestError> {
    let bad = || RequestError::Header(raw.to_string());
    let (name, value) = raw.split_once(':').ok_or_else(bad)?;
    let name =
        HeaderName::from_bytes(name.trim().to_ascii_lowercase().as_bytes()).map_err(|_| bad())?;
    let value = HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
    Ok((name, value))
}

impl ExplainRequest {
    /// `words` is `[METHOD] URL`; `headers` are `name: value`.
    pub fn parse(
        words: &[String],
        headers: &[String],
        sni: Option<&str>,
        path_options: &PathOptions,
    ) -> Result<Self, RequestError> {
        let (method, url) = match words {
            [url] => ("GET", url),
            [method, url] => (method.as_str(), url),
            _ => return Err(RequestError::Shape),
        };
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|_| RequestError::Method(method.to_string()))?;
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| RequestError::Url {
                url: url.clone(),
                reason: e.to_string(),
            })?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(RequestError::Scheme { url: url.clone() }),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| RequestError::NoHost { url: url.clone() })?;
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let url_host = normalized_host(authority.host());
        let mut map = HeaderMap::new();
        for raw in headers {
            let (name, value) = parse_header(raw)?;
            map.append(name, value);
        }
        if !map.contains_key(HOST) {
            // What curl sends: the URL's authority.
            let value = HeaderValue::from_str(authority.as_str())
                .map_err(|_| RequestError::NoHost { url: url.clone() })?;
            map.insert(HOST, value);
        }
        let host = map
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .map(normalized_host)
            .unwrap_or_default();
        let raw_path = uri.path().to_string();
        let path = normalize_path(&raw_path, path_options).map(|p| p.into_owned());
        let sni = if !https {
            None
        } else if let Some(name) = sni {
            Some(normalized_host(name))
        } else {
            (!is_ip_literal(&url_host)).then(|| url_host.clone())
        };
        Ok(ExplainRequest {
            method,
            https,
            url: url.clone(),
            url_host,
            port,
            host,
            path,
            raw_path,
            query: uri.query().map(str::to_string),
            headers: map,
            sni,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str], headers: &[&str]) -> ExplainRequest {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
        ExplainRequest::parse(&words, &headers, None, &PathOptions::default()).unwrap()
    }

    #[test]
    fn reads_a_curl_like_request() {
        let r = parse(&["https://A.Example.com/api/../v1?x=1"], &["X-V: 2"]);
        assert_eq!(r.method, Method::GET);
        assert_eq!((r.https, r.port), (true, 443));
        assert_eq!(r.host, "a.example.com");
        assert_eq!(r.sni.as_deref(), Some("a.example.com"));
        assert_eq!(r.path.as_deref(), Ok("/v1"));
        assert_eq!(r.query.as_deref(), Some("x=1"));
        assert_eq!(r.headers["x-v"], "2");
    }

    #[test]
    fn host_header_wins_and_ip_urls_send_no_sni() {
        let r = parse(&["POST", "https://127.0.0.1:8443/"], &["Host: b.test:8443"]);
        assert_eq!(r.method, Method::POST);
        assert_eq!((r.port, r.host.as_str()), (8443, "b.test"));
        assert_eq!(r.sni, None);
    }

    #[test]
    fn refuses_what_is_not_a_request() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let options = PathOptions::default();
        let err = |w: &[&str], h: &[&str]| {
            let h: Vec<String> = h.iter().map(|s| s.to_string()).collect();
            ExplainRequest::parse(&words(w), &h, None, &options).unwrap_err()
        };
        assert!(matches!(
            err(&["ftp://a/"], &[]),
            RequestError::Scheme { .. }
        ));
        assert!(matches!(
            err(&["/only-a-path"], &[]),
            RequestError::Scheme { .. }
        ));
        assert!(matches!(
            err(&["G ET", "http://a/"], &[]),
            RequestError::Method(_)
        ));
        assert!(matches!(
            err(&["http://a/"], &["novalue"]),
            RequestError::Header(_)
        ));
    }
}
