//! One access-log record: what a request (L4 connection, UDP session) did,
//! as plain values. Request tasks fill it in; the writer formats it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use coxswain_ir::RouteId;
use http::{HeaderValue, Method, Version};

use super::fields::FieldSet;
use super::settings::ListenerTag;

/// What the record is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Http,
    Tcp,
    Udp,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Tcp => "tcp",
            Kind::Udp => "udp",
        }
    }
}

/// The 32 hex digits of a W3C trace id.
pub type TraceId = [u8; 32];

#[derive(Clone, Debug)]
pub struct Record {
    /// The fields to write.
    pub fields: FieldSet,
    /// When the request (connection, session) started.
    pub time: SystemTime,
    pub kind: Kind,
    pub listener: Option<Arc<ListenerTag>>,
    pub route: Option<Arc<RouteId>>,
    pub method: Option<Method>,
    pub host: Option<String>,
    /// The path as the client sent it, without its query (queries carry
    /// tokens more often than paths do).
    pub path: Option<String>,
    pub protocol: Option<Version>,
    pub upstream: Option<SocketAddr>,
    pub status: Option<u16>,
    pub grpc_status: Option<u8>,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    pub duration: Duration,
    pub upstream_connect: Option<Duration>,
    pub upstream_first_byte: Option<Duration>,
    pub tls_version: Option<&'static str>,
    pub sni: Option<Arc<str>>,
    pub client_ip: Option<IpAddr>,
    pub request_id: Option<HeaderValue>,
    pub trace_id: Option<TraceId>,
    pub mirror: bool,
    pub retries: u32,
    /// The gateway (a filter, or the gateway itself) answered, not a backend.
    pub answered_by: Option<&'static str>,
}

impl Record {
    /// A record of `kind` started now, every value still unknown.
    pub fn new(kind: Kind, fields: FieldSet) -> Record {
        Record {
            fields,
            time: SystemTime::now(),
            kind,
            listener: None,
            route: None,
            method: None,
            host: None,
            path: None,
            protocol: None,
            upstream: None,
            status: None,
            grpc_status: None,
            bytes_received: 0,
            bytes_sent: 0,
            duration: Duration::ZERO,
            upstream_connect: None,
            upstream_first_byte: None,
            tls_version: None,
            sni: None,
            client_ip: None,
            request_id: None,
            trace_id: None,
            mirror: false,
            retries: 0,
            answered_by: None,
        }
    }
}
