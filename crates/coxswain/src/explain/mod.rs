//! `coxswain explain`: what the gateway does with one request. The
//! listener and the winning rule come from the proxy's own selection and
//! router code (compiled from the same IR the proxy serves), so the
//! explanation cannot disagree with the proxy; the rest is read off the IR.

pub mod describe;
mod listener;
mod model;
mod near_miss;
mod render;
mod request;
mod rule;
mod source;
#[cfg(test)]
mod tests;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use coxswain_ir::Config;
use coxswain_proxy::router::{RequestView, Router};
use coxswain_proxy::{EscapedSlashes, PathOptions};

use crate::proxy_args::EscapedSlashesArg;
use model::{Explanation, Outcome, RequestSummary};
use request::ExplainRequest;

const EXIT_NOT_ROUTED: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// Config directory, loaded and translated as `check` and `run` do.
    #[arg(
        long,
        short = 'c',
        value_name = "DIR",
        required_unless_present = "admin",
        conflicts_with = "admin"
    )]
    pub config: Option<PathBuf>,
    /// A running gateway's admin address: the config it serves now
    /// (its `/config`) is explained.
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<SocketAddr>,
    /// `[METHOD] URL`, as for curl (the method defaults to GET).
    #[arg(value_name = "REQUEST", required = true, num_args = 1..=2)]
    pub request: Vec<String>,
    /// A request header, `name: value` (repeatable). `Host` replaces the
    /// URL's host for routing, as with curl.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// The TLS server name the client sends (https; default: the URL's
    /// host, none for an IP address).
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// The gateway address connected to, when sockets on several
    /// addresses share the port (default: the URL's, else the first).
    #[arg(long, value_name = "IP")]
    pub address: Option<IpAddr>,
    /// `text` (default) or `json` (the shape in docs/explain.md).
    #[arg(long, short = 'o', value_name = "FORMAT", default_value = "text")]
    pub output: ExplainFormat,
    /// As for `run` (with `--config`): the address of Gateways without
    /// spec.addresses.
    #[arg(
        long,
        default_value = "0.0.0.0",
        value_name = "IP",
        conflicts_with = "admin"
    )]
    pub bind_address: IpAddr,
    /// As for `run` (with `--config`).
    #[arg(
        long,
        default_value = coxswain_translate::DEFAULT_CONTROLLER_NAME,
        value_name = "NAME",
        conflicts_with = "admin"
    )]
    pub controller_name: String,
    /// As for `run`: `%2F`/`%5C` in paths kept or refused (400).
    #[arg(long, default_value = "keep", value_name = "ACTION")]
    pub path_escaped_slashes: EscapedSlashesArg,
    /// As for `run`: repeated slashes collapsed before matching.
    #[arg(long)]
    pub merge_slashes: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExplainFormat {
    Text,
    Json,
}

pub fn explain(args: &ExplainArgs) -> ExitCode {
    let path_options = PathOptions {
        escaped_slashes: match args.path_escaped_slashes {
            EscapedSlashesArg::Keep => EscapedSlashes::Keep,
            EscapedSlashesArg::Reject => EscapedSlashes::Reject,
        },
        merge_slashes: args.merge_slashes,
    };
    let req = match ExplainRequest::parse(
        &args.request,
        &args.headers,
        args.sni.as_deref(),
        &path_options,
    ) {
        Ok(req) => req,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let config = match (&args.config, args.admin) {
        (Some(dir), _) => source::from_dir(dir, &args.controller_name, args.bind_address),
        (None, Some(address)) => source::from_admin(address),
        (None, None) => {
            eprintln!("error: give --config DIR or --admin ADDR");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let config = match config {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let router = Router::compile(&config);
    let explanation = explain_request(&config, &router, &req, args.address);
    let text = match args.output {
        ExplainFormat::Text => Ok(render::text(&explanation)),
        ExplainFormat::Json => serde_json::to_string_pretty(&explanation).map(|s| s + "\n"),
    };
    // A closed pipe (`| head`) is not worth a panic.
    let printed = text.map_err(|e| e.to_string()).and_then(|text| {
        std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string())
    });
    if let Err(e) = printed {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    if explanation.verdict.outcome == Outcome::Routed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_NOT_ROUTED)
    }
}

fn summary(req: &ExplainRequest) -> RequestSummary {
    RequestSummary {
        method: req.method.to_string(),
        url: req.url.clone(),
        scheme: if req.https { "https" } else { "http" },
        host: req.host.clone(),
        port: req.port,
        path: req.path.clone().unwrap_or_else(|_| req.raw_path.clone()),
        query: req.query.clone(),
        sni: req.sni.clone(),
        headers: req
            .headers
            .iter()
            .map(|(k, v)| {
                [
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                ]
            })
            .collect(),
    }
}

fn empty(req: &ExplainRequest, verdict: model::Verdict) -> Explanation {
    Explanation {
        request: summary(req),
        verdict,
        socket: None,
        listener: None,
        other_listeners: Vec::new(),
        route: None,
        filters: Vec::new(),
        response_filters: Vec::new(),
        backends: Vec::new(),
        near_misses: Vec::new(),
    }
}

/// The whole explanation of `req` against `config` (`router` compiled
/// from it).
pub fn explain_request(
    config: &Config,
    router: &Router,
    req: &ExplainRequest,
    address: Option<IpAddr>,
) -> Explanation {
    let path = match &req.path {
        Ok(path) => path.as_str(),
        Err(e) => {
            let message = format!(
                "the path {} is refused before routing ({e}): answered 400",
                req.raw_path
            );
            return empty(req, listener::verdict(Outcome::BadPath, Some(400), message));
        }
    };
    let Some(socket) = listener::socket(config, req, address) else {
        let message = format!(
            "no Gateway listens on port {} (TCP): the connection is refused",
            req.port
        );
        return empty(req, listener::verdict(Outcome::NoSocket, None, message));
    };
    let mut out = empty(
        req,
        listener::verdict(Outcome::NoRoute, Some(404), String::new()),
    );
    out.socket = Some(model::SocketChoice {
        address: socket.addr().to_string(),
        tls: socket.reads_client_hello(),
        proxy_protocol: socket.proxy_protocol.is_some(),
    });
    let (chosen, choice, misses) = listener::choose(router, socket, req);
    out.listener = choice;
    out.other_listeners = misses;
    let index = match chosen {
        Ok(index) => index,
        Err(verdict) => {
            out.verdict = verdict;
            return out;
        }
    };
    let routes = socket
        .listeners
        .get(index)
        .and_then(|l| l.http_routes())
        .unwrap_or_default();
    let view = RequestView {
        host: &req.host,
        method: &req.method,
        path,
        query: req.query.as_deref(),
        headers: &req.headers,
    };
    let hit = router.lookup_in(socket.addr(), index, &view);
    let winner = hit.as_ref().and_then(|hit| rule::ir_rule(routes, hit));
    out.near_misses = near_miss::near_misses(routes, winner, &view);
    let (Some(hit), Some((route, match_index))) = (hit, winner) else {
        out.verdict.message = format!(
            "no rule of this listener matches {} {}: answered 404",
            req.method, path
        );
        return out;
    };
    out.route = Some(rule::choice(route, match_index));
    out.filters = rule::request_filters(&hit, route, config);
    out.response_filters = rule::response_filters(route, config);
    out.backends = rule::backends(route, config);
    out.verdict = routed_verdict(&out);
    out
}

fn routed_verdict(out: &Explanation) -> model::Verdict {
    let answering = out.filters.iter().find(|f| f.answers.is_some());
    let (status, message) = match answering {
        Some(step) => {
            let message = format!(
                "{} answers the request itself ({}); no backend is contacted",
                step.kind, step.detail
            );
            (step.answers, message)
        }
        None if out.backends.iter().all(|b| b.weight == 0) => {
            (Some(500), "no backend has weight: answered 500".to_string())
        }
        None if out
            .backends
            .iter()
            .all(|b| b.weight == 0 || b.invalid.is_some()) =>
        {
            (
                Some(500),
                "every backend with weight is invalid: answered 500".to_string(),
            )
        }
        None => (None, "forwarded to one of the backends below".to_string()),
    };
    listener::verdict(Outcome::Routed, status, message)
}
