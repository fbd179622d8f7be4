//! How the backends are spoken to: the balancing algorithm, the protocol
//! and the timeouts.

use coxswain_ir::{Balancer, HashKey};

use super::Annotations;
use super::reader::{Read, Reader};

/// `backend-protocol` (ingress-nginx's values, plus `H2C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendProtocol {
    Http,
    /// HTTP/1.1 over TLS (a BackendTLSPolicy says how to verify it).
    Https,
    /// HTTP/2 in clear text (prior knowledge).
    Grpc,
    /// HTTP/2 over TLS.
    Grpcs,
    /// Like `Grpc`: cleartext HTTP/2 for any HTTP traffic.
    H2c,
}

impl BackendProtocol {
    /// As `backend-protocol` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendProtocol::Http => "HTTP",
            BackendProtocol::Https => "HTTPS",
            BackendProtocol::Grpc => "GRPC",
            BackendProtocol::Grpcs => "GRPCS",
            BackendProtocol::H2c => "H2C",
        }
    }
}

pub fn parse(r: &mut Reader<'_>, out: &mut Annotations) {
    balancer(r, out);
    if let Read::Valid(p) = r.setting("backend-protocol", Some("backend-protocol"), protocol) {
        out.backend_protocol = Some(p);
    }
    if let Read::Valid(ms) = r.setting(
        "proxy-connect-timeout",
        Some("proxy-connect-timeout"),
        seconds,
    ) {
        out.connect_timeout_ms = Some(ms);
    }
    let read = r.setting("proxy-read-timeout", Some("proxy-read-timeout"), seconds);
    let send = r.setting("proxy-send-timeout", Some("proxy-send-timeout"), seconds);
    // One timeout bounds the whole backend exchange: it must not cut
    // either direction shorter than asked.
    out.backend_timeout_ms = match (read, send) {
        (Read::Valid(a), Read::Valid(b)) => Some(a.max(b)),
        (Read::Valid(a), _) | (_, Read::Valid(a)) => Some(a),
        _ => None,
    };
}

fn protocol(value: &str) -> Result<BackendProtocol, String> {
    match value.to_ascii_uppercase().as_str() {
        "HTTP" => Ok(BackendProtocol::Http),
        "HTTPS" => Ok(BackendProtocol::Https),
        "GRPC" => Ok(BackendProtocol::Grpc),
        "GRPCS" => Ok(BackendProtocol::Grpcs),
        "H2C" => Ok(BackendProtocol::H2c),
        _ => Err("not one of HTTP, HTTPS, GRPC, GRPCS, H2C".into()),
    }
}

/// ingress-nginx's timeouts are whole seconds; a Gateway API duration
/// (`500ms`, `1m`) is taken too.
pub fn seconds(value: &str) -> Result<u64, String> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let s: u64 = value.parse().map_err(|_| "too large".to_string())?;
        if s == 0 {
            return Err("must be at least 1 second".into());
        }
        return s.checked_mul(1000).ok_or_else(|| "too large".into());
    }
    match crate::parse_duration_ms(value) {
        Ok(0) => Err("must be more than 0".into()),
        Ok(ms) => Ok(ms),
        Err(_) => Err("not a number of seconds or a duration (e.g. \"30\", \"500ms\")".into()),
    }
}

/// Coxswain's `load-balancer` takes CoxswainBackendPolicy's algorithm
/// names; nginx's `upstream-hash-by` (which wins there) and
/// `load-balance` map onto the same balancers.
fn balancer(r: &mut Reader<'_>, out: &mut Annotations) {
    let ours = r.coxswain("load-balancer").map(|v| {
        let parsed = crate::policy::backend_policy::balancer(v).ok_or_else(|| {
            "not one of round_robin, least_conn, ewma, ip_hash, hash:uri, hash:source-ip, hash:header=<name>, hash:cookie=<name>".to_string()
        });
        (v, parsed)
    });
    let hash_by = r.nginx("upstream-hash-by");
    let balance = r.nginx("load-balance");
    let theirs = match (hash_by, balance) {
        (Some(v), _) => Some(("upstream-hash-by", v, nginx_hash(v))),
        (None, Some(v)) => Some(("load-balance", v, nginx_balance(v))),
        (None, None) => None,
    };
    if let Read::Valid(b) = r.pick("load-balancer", ours, theirs) {
        out.load_balancer = Some(b);
    }
}

fn nginx_balance(value: &str) -> Result<Balancer, String> {
    match value {
        "round_robin" => Ok(Balancer::RoundRobin),
        "ewma" => Ok(Balancer::Ewma),
        "least_conn" => Ok(Balancer::LeastConn),
        _ => Err("not one of round_robin, ewma, least_conn".into()),
    }
}

/// The nginx variables that name a request attribute Coxswain can hash.
fn nginx_hash(value: &str) -> Result<Balancer, String> {
    let key = match value {
        "$request_uri" => HashKey::Uri,
        "$remote_addr" | "$binary_remote_addr" => HashKey::SourceIp,
        other => {
            let named = |prefix: &str| {
                other
                    .strip_prefix(prefix)
                    .filter(|n| {
                        !n.is_empty()
                            && n.bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                    })
                    .map(str::to_string)
            };
            if let Some(h) = named("$http_") {
                HashKey::Header(h.replace('_', "-").to_ascii_lowercase())
            } else if let Some(c) = named("$cookie_") {
                HashKey::Cookie(c)
            } else {
                return Err(
                    "only $request_uri, $remote_addr, $binary_remote_addr, $http_<name> and $cookie_<name> are supported"
                        .into(),
                );
            }
        }
    };
    Ok(Balancer::Hash(key))
}
