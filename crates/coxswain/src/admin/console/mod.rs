//! The read-only web console on the admin port: a page (`/console/`)
//! whose script polls the JSON views under `/api/v1/`. Everything is
//! embedded in the binary; the page fetches nothing but this admin.

mod l4_traffic;
mod scrape;
mod traffic;
mod views;

use std::time::Instant;

use coxswain_proxy::Proxy;
use hyper::Response;
use serde_json::Value;

use super::ReloadState;
use crate::http_server::{Body, respond};
use traffic::{Sampler, Snapshot};

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");

/// Nothing but this origin: no CDN, no external fetch, no inline script.
const CSP: &str =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'";

pub struct Console {
    sampler: Sampler,
}

impl Console {
    pub fn new(start: Instant) -> Self {
        Console {
            sampler: Sampler::new(start),
        }
    }

    /// The console's answer for `path`, or `None` when the path is not its.
    pub fn handle(&self, path: &str, proxy: &Proxy, state: &ReloadState) -> Option<Response<Body>> {
        let response = match path {
            "/" | "/console" => redirect("/console/"),
            "/console/" => asset("text/html; charset=utf-8", INDEX),
            "/console/console.js" => asset("text/javascript; charset=utf-8", SCRIPT),
            "/console/console.css" => asset("text/css; charset=utf-8", STYLE),
            "/api/v1/gateways" => api(&views::gateways(&state.statuses_json(), &proxy.config())),
            "/api/v1/routes" => {
                let samples = scrape(proxy);
                let rates = self
                    .sampler
                    .rates(Snapshot::from_samples(Instant::now(), &samples));
                api(&views::routes(
                    &state.statuses_json(),
                    &proxy.config(),
                    &rates,
                ))
            }
            "/api/v1/policies" => api(&views::policies(&state.statuses_json())),
            "/api/v1/backends" => api(&views::backends(&proxy.config(), &scrape(proxy))),
            _ => return None,
        };
        Some(response)
    }
}

fn scrape(proxy: &Proxy) -> Vec<scrape::Sample> {
    let mut text = String::new();
    proxy.render_metrics(&mut text);
    scrape::parse(&text)
}

fn redirect(to: &'static str) -> Response<Body> {
    let mut response = respond(308, "text/plain; charset=utf-8", "see /console/\n");
    response
        .headers_mut()
        .insert(http::header::LOCATION, http::HeaderValue::from_static(to));
    response
}

fn asset(content_type: &str, body: &'static str) -> Response<Body> {
    let mut response = respond(200, content_type, body);
    response.headers_mut().insert(
        http::header::CONTENT_SECURITY_POLICY,
        http::HeaderValue::from_static(CSP),
    );
    response
}

fn api(value: &Value) -> Response<Body> {
    let mut response = super::json(value);
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    response
}
