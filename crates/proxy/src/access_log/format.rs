//! Records as text: JSON lines (the default) or `key=value` lines. Both
//! write the selected fields in [`AccessLogField::ALL`] order and leave
//! out a field that has no value for this record (no upstream for a 404,
//! no `grpc_status` for plain HTTP).

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use coxswain_ir::AccessLogField;

use super::record::Record;

/// How records are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// One JSON object per line.
    #[default]
    Json,
    /// One line of space-separated `key=value` pairs; a value with a
    /// space, quote, `=` or control character is a JSON string.
    Text,
}

/// One field's value.
enum Value<'a> {
    Str(&'a str),
    Num(u64),
    Millis(Duration),
    Bool(bool),
}

/// Appends `record` as one line (with its newline) to `out`.
pub fn write(format: AccessLogFormat, record: &Record, out: &mut String) {
    let mut first = true;
    if format == AccessLogFormat::Json {
        out.push('{');
    }
    let mut scratch = String::new();
    for field in AccessLogField::ALL {
        if !record.fields.has(field) {
            continue;
        }
        scratch.clear();
        let Some(value) = value(record, field, &mut scratch) else {
            continue;
        };
        if !first {
            out.push(match format {
                AccessLogFormat::Json => ',',
                AccessLogFormat::Text => ' ',
            });
        }
        first = false;
        match format {
            AccessLogFormat::Json => {
                json_string(field.name(), out);
                out.push(':');
                json_value(&value, out);
            }
            AccessLogFormat::Text => {
                out.push_str(field.name());
                out.push('=');
                text_value(&value, out);
            }
        }
    }
    if format == AccessLogFormat::Json {
        out.push('}');
    }
    out.push('\n');
}

/// `field`'s value in `record`; text that has to be built goes in `scratch`.
fn value<'a>(
    record: &'a Record,
    field: AccessLogField,
    scratch: &'a mut String,
) -> Option<Value<'a>> {
    use AccessLogField as F;
    let route = record.route.as_deref();
    Some(match field {
        F::Time => {
            rfc3339_millis(record.time, scratch);
            Value::Str(scratch)
        }
        F::Kind => Value::Str(record.kind.name()),
        F::Listener => Value::Str(&record.listener.as_ref()?.name),
        F::RouteKind => Value::Str(route?.kind.as_str()),
        F::RouteNamespace => Value::Str(&route?.namespace),
        F::RouteName => Value::Str(&route?.name),
        F::RouteRule => Value::Num(u64::from(route?.rule_index)),
        F::Method => Value::Str(record.method.as_ref()?.as_str()),
        F::Host => Value::Str(record.host.as_deref()?),
        F::Path => Value::Str(record.path.as_deref()?),
        F::Protocol => Value::Str(protocol_name(record.protocol?)),
        F::Upstream => {
            let _ = write!(scratch, "{}", record.upstream?);
            Value::Str(scratch)
        }
        F::Status => Value::Num(u64::from(record.status?)),
        F::GrpcStatus => Value::Num(u64::from(record.grpc_status?)),
        F::BytesReceived => Value::Num(record.bytes_received),
        F::BytesSent => Value::Num(record.bytes_sent),
        F::DurationMs => Value::Millis(record.duration),
        F::UpstreamConnectMs => Value::Millis(record.upstream_connect?),
        F::UpstreamFirstByteMs => Value::Millis(record.upstream_first_byte?),
        F::TlsVersion => Value::Str(record.tls_version?),
        F::Sni => Value::Str(record.sni.as_deref()?),
        F::ClientIp => {
            let _ = write!(scratch, "{}", record.client_ip?);
            Value::Str(scratch)
        }
        // Checked visible ASCII when kept, hex when generated.
        F::RequestId => Value::Str(record.request_id.as_ref()?.to_str().ok()?),
        F::TraceId => Value::Str(std::str::from_utf8(record.trace_id.as_ref()?).ok()?),
        F::Mirror => Value::Bool(record.mirror),
        F::Retries => Value::Num(u64::from(record.retries)),
        F::AnsweredBy => Value::Str(record.answered_by?),
    })
}

fn protocol_name(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}

fn json_value(value: &Value<'_>, out: &mut String) {
    match value {
        Value::Str(s) => json_string(s, out),
        Value::Num(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Millis(d) => millis(*d, out),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    }
}

fn text_value(value: &Value<'_>, out: &mut String) {
    match value {
        Value::Str(s) if s.is_empty() || s.chars().any(needs_quotes) => json_string(s, out),
        Value::Str(s) => out.push_str(s),
        other => json_value(other, out),
    }
}

fn needs_quotes(c: char) -> bool {
    c == ' ' || c == '"' || c == '=' || c == '\\' || c.is_control()
}

/// Milliseconds with microsecond precision (`12.345`).
fn millis(d: Duration, out: &mut String) {
    let micros = d.as_micros();
    let _ = write!(out, "{}.{:03}", micros / 1000, micros % 1000);
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `time` as RFC 3339 in UTC with milliseconds: `2026-12-02T17:41:55.123Z`.
pub fn rfc3339_millis(time: SystemTime, out: &mut String) {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    );
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in
/// 400-year eras of 146097 days (each era repeats the same calendar).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so that leap days end a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::fields::FieldSet;
    use crate::access_log::record::Kind;
    use coxswain_ir::{RouteId, RouteKind};
    use std::sync::Arc;

    fn at(secs: u64, millis: u64) -> String {
        let mut out = String::new();
        rfc3339_millis(
            UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis),
            &mut out,
        );
        out
    }

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.007Z");
        assert_eq!(at(1_796_233_315, 123), "2026-12-02T17:41:55.123Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
    }

    fn record() -> Record {
        let mut r = Record::new(Kind::Http, FieldSet::ALL);
        r.time = UNIX_EPOCH + Duration::from_millis(1_796_233_315_123);
        r.route = Some(Arc::new(RouteId {
            kind: RouteKind::Http,
            namespace: "default".into(),
            name: "web".into(),
            rule_index: 2,
            rule_name: None,
        }));
        r.method = Some(http::Method::GET);
        r.path = Some("/a \"b\"".into());
        r.status = Some(200);
        r.duration = Duration::from_micros(12_345);
        r.client_ip = Some("10.0.0.1".parse().unwrap());
        r
    }

    #[test]
    fn json_lines_parse_back_and_leave_out_unknown_values() {
        let mut out = String::new();
        write(AccessLogFormat::Json, &record(), &mut out);
        assert!(out.ends_with("}\n"), "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["time"], "2026-12-02T17:41:55.123Z");
        assert_eq!(v["kind"], "http");
        assert_eq!(v["route_kind"], "HTTPRoute");
        assert_eq!(v["route_namespace"], "default");
        assert_eq!(v["route_rule"], 2);
        assert_eq!(v["path"], "/a \"b\"");
        assert_eq!(v["status"], 200);
        assert_eq!(v["duration_ms"], 12.345);
        assert_eq!(v["client_ip"], "10.0.0.1");
        assert_eq!(v["mirror"], false);
        assert_eq!(v["retries"], 0);
        assert!(v.get("upstream").is_none(), "{out}");
        assert!(v.get("grpc_status").is_none(), "{out}");
    }

    #[test]
    fn text_lines_quote_only_what_needs_it_and_honour_the_field_set() {
        let mut r = record();
        r.fields = FieldSet::of(&[
            AccessLogField::Method,
            AccessLogField::Path,
            AccessLogField::Status,
            AccessLogField::Upstream,
        ]);
        let mut out = String::new();
        write(AccessLogFormat::Text, &r, &mut out);
        assert_eq!(out, "method=GET path=\"/a \\\"b\\\"\" status=200\n");
    }
}
