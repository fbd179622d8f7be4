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

/// Formats records. Its buffers outlive a line, so a line allocates
/// nothing once they have grown.
#[derive(Debug, Default)]
pub struct LineFormatter {
    stamp: SecondStamp,
    /// Text a field's value is built in.
    scratch: String,
}

impl LineFormatter {
    /// Appends `record` as one line (with its newline) to `out`.
    pub fn write(&mut self, format: AccessLogFormat, record: &Record, out: &mut String) {
        let LineFormatter { stamp, scratch } = self;
        let mut first = true;
        if format == AccessLogFormat::Json {
            out.push('{');
        }
        for field in AccessLogField::ALL {
            if !record.fields.has(field) {
                continue;
            }
            scratch.clear();
            let Some(value) = value(record, field, stamp, scratch) else {
                continue;
            };
            if !first {
                out.push(match format {
                    AccessLogFormat::Json => ',',
                    AccessLogFormat::Text => ' ',
                });
            }
            first = false;
            // Field names are lowercase ASCII words: nothing to escape.
            match format {
                AccessLogFormat::Json => {
                    out.push('"');
                    out.push_str(field.name());
                    out.push_str("\":");
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
}

/// RFC 3339 times in UTC with milliseconds (`2026-12-02T17:41:55.123Z`),
/// remembering the last second's text: records come in bursts from the
/// same second, and the calendar arithmetic is the dearest part of a line.
#[derive(Debug, Default)]
struct SecondStamp {
    /// The whole second `text` is of, and `YYYY-MM-DDTHH:MM:SS` for it.
    second: Option<u64>,
    text: String,
}

impl SecondStamp {
    fn write(&mut self, time: SystemTime, out: &mut String) {
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        if self.second != Some(secs) {
            self.text.clear();
            rfc3339_seconds(secs, &mut self.text);
            self.second = Some(secs);
        }
        out.push_str(&self.text);
        out.push('.');
        push_padded(u64::from(since.subsec_millis()), 3, out);
        out.push('Z');
    }
}

/// Appends `record` as one line (with its newline) to `out`.
#[cfg(test)]
pub fn write(format: AccessLogFormat, record: &Record, out: &mut String) {
    LineFormatter::default().write(format, record, out);
}

/// `field`'s value in `record`; text that has to be built goes in `scratch`.
fn value<'a>(
    record: &'a Record,
    field: AccessLogField,
    stamp: &mut SecondStamp,
    scratch: &'a mut String,
) -> Option<Value<'a>> {
    use AccessLogField as F;
    let route = record.route.as_deref();
    Some(match field {
        F::Time => {
            stamp.write(record.time, scratch);
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
        Value::Num(n) => push_decimal(*n, out),
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
    let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    push_decimal(micros / 1000, out);
    out.push('.');
    push_padded(micros % 1000, 3, out);
}

/// `n` in decimal, without `fmt`'s machinery: most significant digit
/// first, by powers of ten.
fn push_decimal(n: u64, out: &mut String) {
    let mut power = 1u64;
    while n / power >= 10 {
        power *= 10;
    }
    loop {
        let digit = u32::try_from(n / power % 10).unwrap_or_default();
        out.push(char::from_digit(digit, 10).unwrap_or('0'));
        if power == 1 {
            break;
        }
        power /= 10;
    }
}

/// `n` in decimal, zero-padded to `width` digits.
fn push_padded(n: u64, width: usize, out: &mut String) {
    let len = decimal_len(n);
    for _ in len..width {
        out.push('0');
    }
    push_decimal(n, out);
}

fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// `s` as a JSON string. Runs of characters that need no escape are
/// copied whole: paths and names almost never hold one that does.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    let mut plain = 0;
    for (at, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if c.is_control() => "",
            _ => continue,
        };
        out.push_str(s.get(plain..at).unwrap_or_default());
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push_str(escaped);
        }
        plain = at + c.len_utf8();
    }
    out.push_str(s.get(plain..).unwrap_or_default());
    out.push('"');
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC) of `secs` since the Unix epoch.
fn rfc3339_seconds(secs: u64, out: &mut String) {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    for (n, width, then) in [
        (year, 4, '-'),
        (month, 2, '-'),
        (day, 2, 'T'),
        (rest / 3600, 2, ':'),
        (rest % 3600 / 60, 2, ':'),
    ] {
        push_padded(n, width, out);
        out.push(then);
    }
    push_padded(rest % 60, 2, out);
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
        SecondStamp::default().write(
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

    #[test]
    fn numbers_and_strings_format_like_fmt_and_serde_would() {
        for n in [0, 7, 10, 99, 1000, 123_456_789, u64::MAX] {
            let mut out = String::new();
            push_decimal(n, &mut out);
            assert_eq!(out, n.to_string());
        }
        let mut out = String::new();
        millis(Duration::from_micros(1_000_007), &mut out);
        assert_eq!(out, "1000.007");
        for s in ["", "/plain", "a\"b\\c", "\n\t\r", "é\u{1}ü", "\""] {
            let mut out = String::new();
            json_string(s, &mut out);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
        }
        // DEL is a control character: escaped, where serde would not.
        let mut out = String::new();
        json_string("tail\u{7f}", &mut out);
        assert_eq!(out, "\"tail\\u007f\"");
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), "tail\u{7f}");
    }

    #[test]
    fn the_cached_second_changes_with_the_time() {
        let mut formatter = LineFormatter::default();
        let mut r = record();
        r.fields = FieldSet::of(&[AccessLogField::Time]);
        let mut lines = Vec::new();
        for ms in [
            1_796_233_315_123,
            1_796_233_315_999,
            1_796_233_316_000,
            1_796_233_315_001,
        ] {
            r.time = UNIX_EPOCH + Duration::from_millis(ms);
            let mut out = String::new();
            formatter.write(AccessLogFormat::Json, &r, &mut out);
            lines.push(out);
        }
        assert_eq!(
            lines,
            [
                "{\"time\":\"2026-12-02T17:41:55.123Z\"}\n",
                "{\"time\":\"2026-12-02T17:41:55.999Z\"}\n",
                "{\"time\":\"2026-12-02T17:41:56.000Z\"}\n",
                "{\"time\":\"2026-12-02T17:41:55.001Z\"}\n",
            ]
        );
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
