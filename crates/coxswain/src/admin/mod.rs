//! The admin listener: health, readiness, live config, statuses, metrics,
//! and the read-only console.

mod console;
mod state;

pub use state::{ReloadOutcome, ReloadState};

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;

use coxswain_proxy::{Proxy, ProxyOptions};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use tokio::net::TcpListener;

use crate::http_server::{Body, respond, serve};

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders metrics owned by something other than the proxy or the reload
/// state (the Kubernetes controller's counters).
pub type MetricsRenderer = Arc<dyn Fn(&mut String) + Send + Sync>;

#[derive(Clone)]
pub struct Admin {
    pub proxy: Proxy,
    pub state: Arc<ReloadState>,
    pub extra_metrics: Option<MetricsRenderer>,
    pub console: Arc<console::Console>,
}

impl Admin {
    /// Starts a proxy and the admin listener reporting on it: how both
    /// `run` and `controller` begin.
    pub async fn start(
        address: SocketAddr,
        options: ProxyOptions,
        extra_metrics: Option<MetricsRenderer>,
    ) -> anyhow::Result<(Proxy, Arc<ReloadState>)> {
        let proxy = Proxy::new(options);
        let state = Arc::new(ReloadState::default());
        let listener = TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on admin address {address}"))?;
        tracing::info!(%address, "admin listening");
        let admin = Admin {
            proxy: proxy.clone(),
            state: state.clone(),
            extra_metrics,
            console: Arc::new(console::Console::new(std::time::Instant::now())),
        };
        tokio::spawn(admin.serve(listener));
        Ok((proxy, state))
    }

    pub async fn serve(self, listener: TcpListener) {
        let admin = Arc::new(self);
        serve(listener, move |request| {
            let admin = admin.clone();
            async move { admin.handle(&request) }
        })
        .await;
    }

    fn handle(&self, request: &Request<Incoming>) -> Response<Body> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return respond(405, TEXT, "method not allowed\n");
        }
        match request.uri().path() {
            "/healthz" => respond(200, TEXT, "ok\n"),
            "/readyz" if self.state.is_ready() => respond(200, TEXT, "ready\n"),
            "/readyz" => respond(503, TEXT, "not ready: no config serving yet\n"),
            "/config" => json(&*self.proxy.config()),
            "/status" => json(&self.state.statuses_json()),
            "/metrics" => {
                let mut out = String::new();
                self.proxy.render_metrics(&mut out);
                self.state.render_metrics(&mut out);
                if let Some(render) = &self.extra_metrics {
                    render(&mut out);
                }
                respond(200, PROMETHEUS, out)
            }
            path => self
                .console
                .handle(path, &self.proxy, &self.state)
                .unwrap_or_else(|| respond(404, TEXT, "not found\n")),
        }
    }
}

fn json(value: &impl serde::Serialize) -> Response<Body> {
    match serde_json::to_vec_pretty(value) {
        Ok(mut body) => {
            body.push(b'\n');
            respond(200, JSON, body)
        }
        Err(e) => respond(500, TEXT, format!("{e}\n")),
    }
}
