//! One GET of a remote JWK Set, over `http://` or `https://` (rustls,
//! checked against the given roots: the operating system's store in
//! production). Bounded in time and size; anything but a 200 with a set
//! that parses is an error, so the caller keeps its last good keys.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use coxswain_ir::{Jwk, MAX_JWKS_BYTES, parse_jwks};
use http::header::{ACCEPT, CACHE_CONTROL, HOST, USER_AGENT};
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A whole fetch (connect, TLS, request, body) takes at most this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What a successful fetch brought.
#[derive(Debug)]
pub struct Fetched {
    pub keys: Vec<Jwk>,
    /// The response's `Cache-Control: max-age`.
    pub max_age: Option<Duration>,
}

/// Where a key set is fetched from.
#[derive(Debug)]
pub struct Fetcher {
    uri: Uri,
    host: String,
    port: u16,
    tls: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
}

impl Fetcher {
    /// `roots` are needed for `https://` only.
    pub fn new(
        uri: &str,
        roots: impl FnOnce() -> Result<Arc<RootCertStore>, String>,
    ) -> Result<Self, String> {
        let uri: Uri = uri.parse().map_err(|e| format!("{uri}: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("{uri}: not http:// or https://")),
        };
        let host = uri
            .host()
            .ok_or_else(|| format!("{uri}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tls = if https {
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots()?)
            .with_no_client_auth();
            let name = ServerName::try_from(host.clone()).map_err(|e| format!("{host}: {e}"))?;
            Some((Arc::new(config), name))
        } else {
            None
        };
        Ok(Fetcher {
            uri,
            host,
            port,
            tls,
        })
    }

    pub async fn fetch(&self) -> Result<Fetched, String> {
        tokio::time::timeout(FETCH_TIMEOUT, self.fetch_once())
            .await
            .map_err(|_| format!("no answer within {FETCH_TIMEOUT:?}"))?
    }

    async fn fetch_once(&self) -> Result<Fetched, String> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("connect {}:{}: {e}", self.host, self.port))?;
        let (status, max_age, body) = match &self.tls {
            Some((config, name)) => {
                let tls = TlsConnector::from(config.clone())
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                self.exchange(tls).await?
            }
            None => self.exchange(tcp).await?,
        };
        if status != StatusCode::OK {
            return Err(format!("answered {status}"));
        }
        let text =
            std::str::from_utf8(&body).map_err(|_| "the key set is not UTF-8".to_string())?;
        let keys = parse_jwks(text).map_err(|e| e.to_string())?;
        Ok(Fetched { keys, max_age })
    }

    async fn exchange<IO>(&self, io: IO) -> Result<(StatusCode, Option<Duration>, Bytes), String>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let authority = self
            .uri
            .authority()
            .map_or(self.host.as_str(), |a| a.as_str());
        let path = self.uri.path_and_query().map_or("/", |p| p.as_str());
        let request = Request::get(path)
            .header(HOST, authority)
            .header(ACCEPT, "application/jwk-set+json, application/json")
            .header(USER_AGENT, "coxswain-jwt-auth")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let max_age = response
            .headers()
            .get(CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .and_then(max_age);
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok((status, max_age, body))
    }
}

/// `max-age=N` of a `Cache-Control` value.
fn max_age(value: &str) -> Option<Duration> {
    value.split(',').find_map(|directive| {
        let (name, seconds) = directive.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("max-age")
            .then(|| seconds.trim().trim_matches('"').parse().ok())
            .flatten()
            .map(Duration::from_secs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_read_from_cache_control() {
        assert_eq!(
            max_age("public, max-age=600"),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age("MAX-AGE=\"60\""), Some(Duration::from_secs(60)));
        assert_eq!(max_age("no-cache"), None);
        assert_eq!(max_age("max-age=soon"), None);
    }

    /// An HTTPS server for `localhost` (certificate from a throwaway CA)
    /// answering one key set with `max-age=120`; the CA's roots.
    async fn https_server() -> (u16, Arc<RootCertStore>) {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let jwks = format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{}"}}]}}"#,
            "A".repeat(43)
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, jwks) = (acceptor.clone(), jwks.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |_req| {
                        let jwks = jwks.clone();
                        async move {
                            let mut r =
                                http::Response::new(http_body_util::Full::new(Bytes::from(jwks)));
                            r.headers_mut()
                                .insert(CACHE_CONTROL, "public, max-age=120".parse().unwrap());
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        (port, Arc::new(roots))
    }

    #[tokio::test]
    async fn fetches_over_https_checked_against_the_roots() {
        let (port, roots) = https_server().await;
        let uri = format!("https://localhost:{port}/jwks.json");
        let fetched = Fetcher::new(&uri, || Ok(roots))
            .unwrap()
            .fetch()
            .await
            .unwrap();
        assert_eq!(fetched.keys.len(), 1);
        assert_eq!(fetched.max_age, Some(Duration::from_secs(120)));
        // Another trust store: the certificate is refused.
        let untrusted = Fetcher::new(&uri, || Ok(Arc::new(RootCertStore::empty())))
            .unwrap()
            .fetch()
            .await
            .unwrap_err();
        assert!(untrusted.starts_with("TLS"), "{untrusted}");
    }

    #[test]
    fn only_http_and_https_urls_with_a_host() {
        let none = || Err("no roots".to_string());
        assert!(Fetcher::new("http://127.0.0.1:8080/jwks", none).is_ok());
        assert!(
            Fetcher::new("https://issuer.test/jwks", none).is_err(),
            "needs roots"
        );
        assert!(Fetcher::new("ftp://issuer.test/jwks", none).is_err());
        assert!(Fetcher::new("/jwks", none).is_err());
    }
}
