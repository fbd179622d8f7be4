//! Finished spans as one OTLP export request.

use prost::Message;

use super::proto::{
    AnyValue, ExportTraceServiceRequest, FLAG_HAS_IS_REMOTE, FLAG_IS_REMOTE, InstrumentationScope,
    KeyValue, Resource, ResourceSpans, SPAN_KIND_CLIENT, SPAN_KIND_SERVER, STATUS_ERROR,
    ScopeSpans, Span, Status,
};
use crate::trace::span::{SpanData, SpanKind, Value};

/// The semantic conventions version the attribute names follow.
const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.26.0";

/// The resource every span of this process belongs to.
pub fn resource(service_name: &str) -> Resource {
    Resource {
        attributes: vec![
            string("service.name", service_name.to_string()),
            string("service.version", env!("CARGO_PKG_VERSION").to_string()),
            string("telemetry.sdk.name", "coxswain".to_string()),
            string("telemetry.sdk.language", "rust".to_string()),
        ],
    }
}

/// `spans` as the protobuf body of one export call.
pub fn request(resource: &Resource, spans: &[SpanData]) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "coxswain-proxy".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans: spans.iter().map(span).collect(),
                schema_url: SCHEMA_URL.into(),
            }],
            schema_url: SCHEMA_URL.into(),
        }],
    }
    .encode_to_vec()
}

fn span(data: &SpanData) -> Span {
    let remote = if data.remote_parent {
        FLAG_HAS_IS_REMOTE | FLAG_IS_REMOTE
    } else {
        FLAG_HAS_IS_REMOTE
    };
    Span {
        trace_id: data.trace_id.to_vec(),
        span_id: data.span_id.to_vec(),
        trace_state: data
            .trace_state
            .as_ref()
            .and_then(|s| s.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        parent_span_id: data.parent_span_id.map(|p| p.to_vec()).unwrap_or_default(),
        name: data.name.to_string(),
        kind: match data.kind {
            SpanKind::Server => SPAN_KIND_SERVER,
            SpanKind::Client => SPAN_KIND_CLIENT,
        },
        start_time_unix_nano: data.start_unix_nanos,
        end_time_unix_nano: data.end_unix_nanos,
        attributes: data
            .attributes
            .iter()
            .map(|(key, value)| KeyValue {
                key: (*key).to_string(),
                value: Some(any(value)),
            })
            .collect(),
        status: data.error.as_ref().map(|why| Status {
            message: why.to_string(),
            code: STATUS_ERROR,
        }),
        flags: u32::from(data.flags) | remote,
    }
}

fn any(value: &Value) -> AnyValue {
    let mut any = AnyValue::default();
    match value {
        Value::Str(s) => any.string_value = Some(s.to_string()),
        Value::Int(n) => any.int_value = Some(*n),
        Value::Bool(b) => any.bool_value = Some(*b),
    }
    any
}

fn string(key: &str, value: String) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            string_value: Some(value),
            ..AnyValue::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::span::Recorder;

    #[test]
    fn a_span_encodes_and_decodes_with_its_fields() {
        let mut r = Recorder::start(
            ([1; 16], [2; 8]),
            Some([3; 8]),
            "GET /".into(),
            SpanKind::Server,
        );
        r.data.remote_parent = true;
        r.set("http.response.status_code", 503u16);
        r.set("url.path", "/");
        r.set("coxswain.response.incomplete", true);
        r.fail("HTTP 503");
        let body = request(&resource("gw"), &[r.end()]);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let scope = &decoded.resource_spans[0].scope_spans[0];
        let span = &scope.spans[0];
        assert_eq!(span.trace_id, vec![1; 16]);
        assert_eq!(span.parent_span_id, vec![3; 8]);
        assert_eq!(span.kind, SPAN_KIND_SERVER);
        assert_eq!(span.flags, 0x301);
        assert_eq!(span.status.as_ref().unwrap().code, STATUS_ERROR);
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
        let status = &span.attributes[0];
        assert_eq!(status.value.as_ref().unwrap().int_value, Some(503));
        let service = &decoded.resource_spans[0]
            .resource
            .as_ref()
            .unwrap()
            .attributes[0];
        assert_eq!(
            service.value.as_ref().unwrap().string_value.as_deref(),
            Some("gw")
        );
    }
}
