//! Frontend client-certificate validation: a listener that validates
//! refuses the handshake without a certificate from its CA; in
//! AllowInsecureFallback it asks but lets everyone in; a CA swap applies to
//! new connections.

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::pki::Ca;
use common::*;
use coxswain_ir::{
    CaBundle, ClientValidation, ClientValidationMode, PrivateKeyPem, TlsCertificate, TlsTermination,
};
use coxswain_proxy::ProxyOptions;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;

fn server_cert() -> (TlsCertificate, CertificateDer<'static>) {
    let generated = rcgen::generate_simple_self_signed(vec!["m.test".to_string()]).unwrap();
    (
        TlsCertificate {
            source: "ns/server".into(),
            cert_chain_pem: generated.cert.pem(),
            key_pem: PrivateKeyPem(generated.signing_key.serialize_pem().into()),
        },
        generated.cert.der().clone(),
    )
}

fn mtls_config(
    port: u16,
    server: &TlsCertificate,
    ca: &Ca,
    mode: ClientValidationMode,
    backend: std::net::SocketAddr,
) -> Arc<coxswain_ir::Config> {
    let mut listener = gateway_listener(
        "https",
        None,
        vec![route("m", &[], vec![prefix("/")], vec![to("echo", 1)])],
    );
    listener.tls = Some(TlsTermination {
        certificates: vec![server.clone()],
        client_validation: Some(ClientValidation {
            ca_bundles: vec![CaBundle {
                source: "ConfigMap ns/client-ca".into(),
                pem: ca.pem().into(),
            }],
            mode,
        }),
    });
    config(
        vec![socket(port, vec![listener])],
        vec![cluster("echo", &[backend])],
    )
}

/// A TLS connection presenting `client` (if any), then one GET.
async fn request_with(
    port: u16,
    server_der: &CertificateDer<'static>,
    client: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> Result<StatusCode, String> {
    exchange(port, server_der, client, &[])
        .await
        .map(|(status, _)| status)
}

/// [`request_with`] with extra request headers, returning the body too.
async fn exchange(
    port: u16,
    server_der: &CertificateDer<'static>,
    client: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
    headers: &[(&str, &str)],
) -> Result<(StatusCode, serde_json::Value), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server_der.clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder.with_client_auth_cert(vec![cert], key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = TcpStream::connect((LOCALHOST, port)).await.unwrap();
    let name = ServerName::try_from("m.test").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = Request::get("/").header("host", "m.test");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(Full::new(Bytes::new())).unwrap();
    // TLS 1.3: a refused client certificate surfaces on the first read.
    let response = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, serde_json::from_slice(&body).unwrap_or_default()))
}

/// The x-forwarded-client-cert the backend saw, if any.
fn xfcc(echo: &serde_json::Value) -> Option<String> {
    echo["headers"]["x-forwarded-client-cert"]
        .as_str()
        .map(str::to_string)
}

#[tokio::test]
async fn the_verified_identity_is_forwarded_only_when_configured_and_never_forged() {
    let backend = echo_backend("b").await;
    let (server, server_der) = server_cert();
    let (ca, other) = (Ca::new("client-ca"), Ca::new("other-ca"));
    let forged = [("x-forwarded-client-cert", "Subject=\"CN=admin\"")];

    // Not configured: nothing forwarded, and a client's own header is gone.
    let port = free_port();
    let cfg = mtls_config(
        port,
        &server,
        &ca,
        ClientValidationMode::AllowValidOnly,
        backend.addr,
    );
    let (_plain, _) = start_proxy(cfg).await;
    let (status, echo) = exchange(port, &server_der, Some(ca.client()), &forged)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(xfcc(&echo), None, "{echo}");

    // Configured: the verified certificate's identity, and only it.
    let options = ProxyOptions {
        forward_client_cert: true,
        ..ProxyOptions::default()
    };
    let port = free_port();
    let cfg = mtls_config(
        port,
        &server,
        &ca,
        ClientValidationMode::AllowValidOnly,
        backend.addr,
    );
    let (_forwarding, _) = start_proxy_with(cfg, options.clone()).await;
    let (_, echo) = exchange(port, &server_der, Some(ca.client()), &forged)
        .await
        .unwrap();
    let header = xfcc(&echo).unwrap_or_default();
    assert!(header.starts_with("Hash="), "{header}");
    assert!(header.contains(r#"Subject="CN=client""#), "{header}");
    assert!(!header.contains("admin"), "{header}");

    // AllowInsecureFallback lets a stranger's certificate in, but it is no
    // identity; neither is no certificate.
    let port = free_port();
    let mode = ClientValidationMode::AllowInsecureFallback;
    let cfg = mtls_config(port, &server, &ca, mode, backend.addr);
    let (_fallback, _) = start_proxy_with(cfg, options).await;
    for client in [Some(other.client()), None] {
        let (status, echo) = exchange(port, &server_der, client, &forged).await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(xfcc(&echo), None, "{echo}");
    }
    let (_, echo) = exchange(port, &server_der, Some(ca.client()), &[])
        .await
        .unwrap();
    assert!(
        xfcc(&echo).is_some_and(|h| h.contains("CN=client")),
        "{echo}"
    );
}

#[tokio::test]
async fn allow_valid_only_requires_a_certificate_from_the_ca() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (server, server_der) = server_cert();
    let ca = Ca::new("client-ca");
    let other = Ca::new("other-ca");
    let cfg = mtls_config(
        port,
        &server,
        &ca,
        ClientValidationMode::AllowValidOnly,
        backend.addr,
    );
    let (_proxy, _) = start_proxy(cfg).await;
    assert_eq!(
        request_with(port, &server_der, Some(ca.client())).await,
        Ok(StatusCode::OK)
    );
    assert!(
        request_with(port, &server_der, None).await.is_err(),
        "no certificate"
    );
    assert!(
        request_with(port, &server_der, Some(other.client()))
            .await
            .is_err(),
        "a certificate from another CA"
    );
    assert_eq!(backend.hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn insecure_fallback_asks_but_lets_everyone_in() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (server, server_der) = server_cert();
    let ca = Ca::new("client-ca");
    let other = Ca::new("other-ca");
    let cfg = mtls_config(
        port,
        &server,
        &ca,
        ClientValidationMode::AllowInsecureFallback,
        backend.addr,
    );
    let (_proxy, _) = start_proxy(cfg).await;
    for client in [Some(ca.client()), Some(other.client()), None] {
        assert_eq!(
            request_with(port, &server_der, client).await,
            Ok(StatusCode::OK)
        );
    }
}

#[tokio::test]
async fn a_new_ca_applies_to_new_connections() {
    let backend = echo_backend("b").await;
    let port = free_port();
    let (server, server_der) = server_cert();
    let (first, second) = (Ca::new("first"), Ca::new("second"));
    let mode = ClientValidationMode::AllowValidOnly;
    let (proxy, _) = start_proxy(mtls_config(port, &server, &first, mode, backend.addr)).await;
    assert_eq!(
        request_with(port, &server_der, Some(first.client())).await,
        Ok(StatusCode::OK)
    );
    proxy
        .apply(mtls_config(port, &server, &second, mode, backend.addr))
        .await;
    assert_eq!(
        request_with(port, &server_der, Some(second.client())).await,
        Ok(StatusCode::OK)
    );
    assert!(
        request_with(port, &server_der, Some(first.client()))
            .await
            .is_err()
    );
}
