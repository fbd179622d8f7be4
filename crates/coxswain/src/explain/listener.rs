//! Which socket and Gateway listener take the request: the port, then the
//! SNI (TLS) and the Host, decided by the proxy's own selection code.

use std::net::IpAddr;

use coxswain_ir::{Config, Listener, Serve, Socket, Transport};
use coxswain_proxy::listen::tls::sni_listener;
use coxswain_proxy::router::Router;

use super::model::{ListenerChoice, ListenerMiss, Outcome, Verdict};
use super::request::ExplainRequest;

pub fn verdict(outcome: Outcome, status: Option<u16>, message: String) -> Verdict {
    Verdict {
        outcome,
        status,
        message,
    }
}

/// The TCP socket on the request's port: the one on `address` when
/// given, else the one on the URL's IP address, else the first.
pub fn socket<'c>(
    config: &'c Config,
    req: &ExplainRequest,
    address: Option<IpAddr>,
) -> Option<&'c Socket> {
    let on_port: Vec<&Socket> = config
        .sockets
        .iter()
        .filter(|s| s.transport == Transport::Tcp && s.port == req.port)
        .collect();
    let url_ip = req
        .url_host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    match address {
        Some(ip) => on_port.into_iter().find(|s| s.address == ip),
        None => on_port
            .iter()
            .find(|s| Some(s.address) == url_ip)
            .or(on_port.first())
            .copied(),
    }
}

fn serves(listener: &Listener) -> &'static str {
    match listener.serve {
        Serve::Http(_) => "HTTP",
        Serve::TlsPassthrough(_) => "TLS passthrough (TLSRoute)",
        Serve::Tcp(_) => "TCP (TCPRoute)",
        Serve::Udp(_) => "UDP (UDPRoute)",
    }
}

fn hostname(listener: &Listener) -> Option<String> {
    listener.hostname.as_ref().map(|h| h.as_str().to_string())
}

fn label(listener: &Listener) -> String {
    format!("{}/{}", listener.gateway, listener.name)
}

/// Why the listener at `index` is the one that owns `name` (an SNI or Host).
fn why_chosen(listener: &Listener, name: &str, what: &str) -> String {
    match &listener.hostname {
        Some(h) if !h.is_wildcard() => {
            format!("its hostname {h} is the {what} {name}", h = h.as_str())
        }
        Some(h) => format!(
            "its hostname {} covers the {what} {name}, and no listener more specific does",
            h.as_str()
        ),
        None => {
            format!("it has no hostname, and no listener with a hostname covers the {what} {name}")
        }
    }
}

/// Why the listener at `index` does not take a request for `name`,
/// `chosen` being the one that does.
fn why_not(listener: &Listener, chosen: Option<&Listener>, name: &str, what: &str) -> String {
    if !matches!(listener.serve, Serve::Http(_)) {
        return format!("it serves {}", serves(listener));
    }
    let chosen = chosen.map(label).unwrap_or_default();
    match &listener.hostname {
        Some(h) if !h.matches(name) => {
            format!(
                "its hostname {} does not cover the {what} {name}",
                h.as_str()
            )
        }
        Some(_) => format!("{chosen} takes the {what} {name} first (as specific or more)"),
        None => format!(
            "it has no hostname: it takes only what no other listener covers, and {chosen} covers {name}"
        ),
    }
}

/// The listener that takes the request, with the other listeners of the
/// socket and why they do not; or why none does.
pub fn choose(
    router: &Router,
    socket: &Socket,
    req: &ExplainRequest,
) -> (
    Result<usize, Verdict>,
    Option<ListenerChoice>,
    Vec<ListenerMiss>,
) {
    let tls = socket.reads_client_hello();
    let port = socket.port;
    if tls != req.https {
        let message = if tls {
            format!(
                "the socket on port {port} expects a TLS ClientHello: a plain HTTP request is not one, and the connection is closed"
            )
        } else {
            format!(
                "the socket on port {port} serves plain HTTP: a TLS ClientHello is not HTTP, and the connection is closed"
            )
        };
        return (
            Err(verdict(Outcome::TlsMismatch, None, message)),
            None,
            Vec::new(),
        );
    }
    let by_host = router.listener(socket.addr(), &req.host);
    let (index, name, what) = if tls {
        let sni = req.sni.as_deref();
        let Some(index) = sni_listener(socket, sni) else {
            let message = match sni {
                Some(name) => format!(
                    "no listener on port {port} owns the SNI {name}: the handshake is refused"
                ),
                None => format!(
                    "the client sends no SNI and every listener on port {port} has a hostname: the handshake is refused"
                ),
            };
            let misses = misses(socket, None, sni.unwrap_or(""), "SNI");
            return (
                Err(verdict(Outcome::NoListener, None, message)),
                None,
                misses,
            );
        };
        (index, sni.unwrap_or(""), "SNI")
    } else {
        let Some(index) = by_host else {
            let message = format!(
                "no HTTP listener on port {port} owns the Host {}: answered 404",
                req.host
            );
            let misses = misses(socket, None, &req.host, "Host");
            return (
                Err(verdict(Outcome::NoListener, Some(404), message)),
                None,
                misses,
            );
        };
        (index, req.host.as_str(), "Host")
    };
    let Some(listener) = socket.listeners.get(index) else {
        let message = format!("listener {index} is missing from the socket");
        return (
            Err(verdict(Outcome::NoListener, None, message)),
            None,
            Vec::new(),
        );
    };
    let mut reason = why_chosen(listener, name, what);
    let mut result = Ok(index);
    if tls {
        if !matches!(listener.serve, Serve::Http(_)) {
            let message = format!(
                "the SNI picks {}, which serves {}: the connection is not routed as HTTP",
                label(listener),
                serves(listener)
            );
            result = Err(verdict(Outcome::NotHttp, None, message));
        } else if listener
            .tls
            .as_ref()
            .is_none_or(|t| t.certificates.is_empty())
        {
            let message = format!(
                "{} has no usable certificate: the handshake is refused",
                label(listener)
            );
            result = Err(verdict(Outcome::NoListener, None, message));
        } else if by_host != Some(index) {
            let owner = by_host
                .and_then(|i| socket.listeners.get(i))
                .map_or_else(|| "no listener".to_string(), label);
            let message = format!(
                "the SNI picks {}, but the Host {} belongs to {owner}: answered 421 Misdirected Request",
                label(listener),
                req.host
            );
            result = Err(verdict(Outcome::Misdirected, Some(421), message));
        } else {
            reason = format!("{reason}; the Host {} belongs to it too", req.host);
        }
    }
    let choice = ListenerChoice {
        gateway: listener.gateway.clone(),
        name: listener.name.clone(),
        listener_set: listener.listener_set.clone(),
        hostname: hostname(listener),
        index,
        reason,
    };
    (
        result,
        Some(choice),
        misses(socket, Some(index), name, what),
    )
}

fn misses(socket: &Socket, chosen: Option<usize>, name: &str, what: &str) -> Vec<ListenerMiss> {
    let chosen_listener = chosen.and_then(|i| socket.listeners.get(i));
    socket
        .listeners
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != chosen)
        .map(|(index, l)| ListenerMiss {
            gateway: l.gateway.clone(),
            name: l.name.clone(),
            hostname: hostname(l),
            index,
            reason: why_not(l, chosen_listener, name, what),
        })
        .collect()
}
