//! Access-log settings: the fields a record may carry and a listener's
//! override of the process-wide defaults (a ClientTrafficPolicy's
//! `accessLog`). The field names here are the names in the records and in
//! docs/observability.md.

use serde::{Deserialize, Serialize};

/// One field of an access-log record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessLogField {
    Time,
    /// `http`, `tcp` or `udp`.
    Kind,
    Listener,
    RouteKind,
    RouteNamespace,
    RouteName,
    RouteRule,
    Method,
    Host,
    Path,
    Protocol,
    Upstream,
    Status,
    GrpcStatus,
    BytesReceived,
    BytesSent,
    DurationMs,
    UpstreamConnectMs,
    UpstreamFirstByteMs,
    TlsVersion,
    Sni,
    ClientIp,
    RequestId,
    TraceId,
    Mirror,
    Retries,
    AnsweredBy,
}

impl AccessLogField {
    /// Every field, in record order.
    pub const ALL: [AccessLogField; 27] = [
        AccessLogField::Time,
        AccessLogField::Kind,
        AccessLogField::Listener,
        AccessLogField::RouteKind,
        AccessLogField::RouteNamespace,
        AccessLogField::RouteName,
        AccessLogField::RouteRule,
        AccessLogField::Method,
        AccessLogField::Host,
        AccessLogField::Path,
        AccessLogField::Protocol,
        AccessLogField::Upstream,
        AccessLogField::Status,
        AccessLogField::GrpcStatus,
        AccessLogField::BytesReceived,
        AccessLogField::BytesSent,
        AccessLogField::DurationMs,
        AccessLogField::UpstreamConnectMs,
        AccessLogField::UpstreamFirstByteMs,
        AccessLogField::TlsVersion,
        AccessLogField::Sni,
        AccessLogField::ClientIp,
        AccessLogField::RequestId,
        AccessLogField::TraceId,
        AccessLogField::Mirror,
        AccessLogField::Retries,
        AccessLogField::AnsweredBy,
    ];

    /// The field's name in a record.
    pub const fn name(self) -> &'static str {
        match self {
            AccessLogField::Time => "time",
            AccessLogField::Kind => "kind",
            AccessLogField::Listener => "listener",
            AccessLogField::RouteKind => "route_kind",
            AccessLogField::RouteNamespace => "route_namespace",
            AccessLogField::RouteName => "route_name",
            AccessLogField::RouteRule => "route_rule",
            AccessLogField::Method => "method",
            AccessLogField::Host => "host",
            AccessLogField::Path => "path",
            AccessLogField::Protocol => "protocol",
            AccessLogField::Upstream => "upstream",
            AccessLogField::Status => "status",
            AccessLogField::GrpcStatus => "grpc_status",
            AccessLogField::BytesReceived => "bytes_received",
            AccessLogField::BytesSent => "bytes_sent",
            AccessLogField::DurationMs => "duration_ms",
            AccessLogField::UpstreamConnectMs => "upstream_connect_ms",
            AccessLogField::UpstreamFirstByteMs => "upstream_first_byte_ms",
            AccessLogField::TlsVersion => "tls_version",
            AccessLogField::Sni => "sni",
            AccessLogField::ClientIp => "client_ip",
            AccessLogField::RequestId => "request_id",
            AccessLogField::TraceId => "trace_id",
            AccessLogField::Mirror => "mirror",
            AccessLogField::Retries => "retries",
            AccessLogField::AnsweredBy => "answered_by",
        }
    }

    /// The field named `name` (as [`AccessLogField::name`] spells it).
    pub fn parse(name: &str) -> Option<AccessLogField> {
        AccessLogField::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its position in [`AccessLogField::ALL`] (a bit in a field set).
    pub const fn index(self) -> u32 {
        self as u32
    }
}

/// A listener's own access-log settings; what is unset keeps the
/// process-wide default (the `--access-log-*` flags).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessLogPolicy {
    /// No records for this listener's requests and connections.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// The share of requests (connections, sessions) logged, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ratio: Option<f64>,
    /// The fields each record carries, in record order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<AccessLogField>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_parses_from_its_name_and_serialises_as_it() {
        for (i, field) in AccessLogField::ALL.into_iter().enumerate() {
            assert_eq!(AccessLogField::parse(field.name()), Some(field));
            assert_eq!(field.index() as usize, i, "ALL is in declaration order");
            let json = serde_json::to_string(&field).unwrap();
            assert_eq!(json, format!("\"{}\"", field.name()));
        }
        assert_eq!(AccessLogField::parse("nope"), None);
    }
}
