//! The echo backend: answers every request with JSON describing what it
//! received, so tests (and people trying the quickstart) can see exactly
//! what the gateway forwarded. `?delay_ms=N` delays the answer (capped at
//! one minute) to let tests hold a request in flight.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde::Serialize;
use tokio::net::TcpListener;

use crate::cli::EchoArgs;
use crate::http_server::{Body, respond, serve};

const MAX_DELAY: Duration = Duration::from_secs(60);

/// Who this echo server says it is.
#[derive(Clone, Debug)]
pub struct Identity {
    pub pod: String,
    pub namespace: String,
    pub service: String,
}

impl Identity {
    pub fn from_env(name: Option<String>) -> Self {
        let env = |key: &str| std::env::var(key).unwrap_or_default();
        let pod = name
            .or_else(|| std::env::var("POD_NAME").ok())
            .unwrap_or_else(|| "echo".to_string());
        Identity {
            pod,
            namespace: env("NAMESPACE"),
            service: env("SERVICE_NAME"),
        }
    }
}

#[derive(Serialize)]
struct Echo<'a> {
    path: &'a str,
    host: &'a str,
    method: &'a str,
    proto: &'static str,
    headers: BTreeMap<String, Vec<String>>,
    query: &'a str,
    namespace: &'a str,
    ingress: &'a str,
    service: &'a str,
    pod: &'a str,
}

/// `coxswain echo`: serves until killed.
pub async fn serve_forever(args: EchoArgs) -> anyhow::Result<()> {
    let listener = bind(args.listen).await?;
    tracing::info!(address = %args.listen, "echo backend listening");
    serve_on(listener, Identity::from_env(args.name)).await;
    Ok(())
}

pub async fn bind(address: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))
}

pub async fn serve_on(listener: TcpListener, identity: Identity) {
    let identity = Arc::new(identity);
    serve(listener, move |request| {
        let identity = identity.clone();
        async move { answer(request, &identity).await }
    })
    .await;
}

/// The most of a request body the echo reads before answering anyway.
const DRAIN_LIMIT: usize = 1 << 20;

/// Reads a request body to its end (or [`DRAIN_LIMIT`]), as an origin that
/// uses its body does: answering first would race the client's next frames
/// (h2spec's malformed-trailers cases among them).
async fn drain(mut body: Incoming) {
    use http_body_util::BodyExt;
    let mut read = 0;
    while read < DRAIN_LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len()),
            Some(Err(_)) | None => return,
        }
    }
}

async fn answer(request: Request<Incoming>, identity: &Identity) -> Response<Body> {
    let (parts, body) = request.into_parts();
    drain(body).await;
    let request = Request::from_parts(parts, ());
    let query = request.uri().query().unwrap_or_default();
    if let Some(delay) = delay_from_query(query) {
        tracing::info!(
            path = request.uri().path(),
            delay_ms = delay.as_millis(),
            "echo holding request"
        );
        tokio::time::sleep(delay).await;
    }
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in request.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(canonical(name.as_str()))
            .or_default()
            .push(value);
    }
    let host = request
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| request.headers().get(http::header::HOST)?.to_str().ok())
        .unwrap_or_default();
    let proto = match request.version() {
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    };
    let echo = Echo {
        path: request.uri().path(),
        host,
        method: request.method().as_str(),
        proto,
        headers,
        query,
        namespace: &identity.namespace,
        ingress: "",
        service: &identity.service,
        pod: &identity.pod,
    };
    match serde_json::to_vec_pretty(&echo) {
        Ok(mut body) => {
            body.push(b'\n');
            respond(200, "application/json", body)
        }
        Err(e) => respond(500, "text/plain", e.to_string()),
    }
}

fn delay_from_query(query: &str) -> Option<Duration> {
    let millis = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("delay_ms="))?
        .parse()
        .ok()?;
    Some(Duration::from_millis(millis).min(MAX_DELAY))
}

/// `x-forwarded-for` -> `X-Forwarded-For`, the way Go servers print names.
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_and_names() {
        assert_eq!(
            delay_from_query("a=1&delay_ms=250"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(delay_from_query("delay_ms=99999999"), Some(MAX_DELAY));
        assert_eq!(delay_from_query("delay_ms=x"), None);
        assert_eq!(canonical("x-forwarded-for"), "X-Forwarded-For");
    }
}
