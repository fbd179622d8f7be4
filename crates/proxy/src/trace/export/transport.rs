//! One OTLP export call: a protobuf body POSTed to the receiver, over
//! gRPC (`TraceService/Export`, h2c) or OTLP/HTTP (`/v1/traces`).

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, TE};
use http::uri::PathAndQuery;
use http::{HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use prost::Message;

use super::proto::ExportTraceServiceResponse;
use super::{ExportError, OtlpProtocol};

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const HTTP_PATH: &str = "/v1/traces";

/// The most of a receiver's answer that is read.
const MAX_ANSWER: usize = 64 * 1024;

/// gRPC codes worth another try (the OTLP specification's list).
const RETRYABLE_GRPC: [u32; 6] = [1, 4, 8, 10, 11, 14];

pub struct Transport {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
    protocol: OtlpProtocol,
    timeout: Duration,
}

/// What a successful call said about the spans it carried.
pub struct Accepted {
    /// Spans the receiver refused (partial success).
    pub rejected: u64,
}

impl Transport {
    pub fn new(
        endpoint: &Uri,
        protocol: OtlpProtocol,
        timeout: Duration,
    ) -> Result<Self, ExportError> {
        let uri = traces_uri(endpoint, protocol)?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        let client = Client::builder(TokioExecutor::new())
            .http2_only(protocol == OtlpProtocol::Grpc)
            .build(connector);
        Ok(Transport {
            client,
            uri,
            protocol,
            timeout,
        })
    }

    pub async fn send(&self, message: Vec<u8>) -> Result<Accepted, ExportError> {
        let body = match self.protocol {
            OtlpProtocol::Grpc => grpc_frame(&message)?,
            OtlpProtocol::Http => Bytes::from(message),
        };
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        match self.protocol {
            OtlpProtocol::Grpc => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
                headers.insert(TE, HeaderValue::from_static("trailers"));
            }
            OtlpProtocol::Http => {
                headers.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/x-protobuf"),
                );
            }
        }
        let call = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| ExportError::Unreachable(e.to_string()))?;
            let (parts, body) = response.into_parts();
            let collected = Limited::new(body, MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| ExportError::Unreachable(format!("reading the answer: {e}")))?;
            let trailers = collected.trailers().cloned().unwrap_or_default();
            Ok::<_, ExportError>((parts, trailers, collected.to_bytes()))
        };
        let (parts, trailers, body) = tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| ExportError::TimedOut)??;
        match self.protocol {
            OtlpProtocol::Grpc => {
                if parts.status != StatusCode::OK {
                    return Err(ExportError::Status(parts.status.as_u16(), true));
                }
                let code = trailers
                    .get("grpc-status")
                    .or_else(|| parts.headers.get("grpc-status"))
                    .and_then(|v| v.to_str().ok()?.parse::<u32>().ok());
                match code {
                    Some(0) => Ok(accepted(unframe(&body))),
                    Some(code) => Err(ExportError::Grpc(code, RETRYABLE_GRPC.contains(&code))),
                    None => Err(ExportError::Grpc(2, false)),
                }
            }
            OtlpProtocol::Http => {
                let status = parts.status;
                if status.is_success() {
                    return Ok(accepted(Some(&body)));
                }
                let retryable = matches!(status.as_u16(), 429 | 502 | 503 | 504);
                Err(ExportError::Status(status.as_u16(), retryable))
            }
        }
    }
}

/// Where export calls go: the gRPC method on the endpoint, or for
/// OTLP/HTTP a base URL with `/v1/traces` added (a URL with a path is
/// used as given). Plain `http://` only.
pub fn traces_uri(endpoint: &Uri, protocol: OtlpProtocol) -> Result<Uri, ExportError> {
    match endpoint.scheme_str() {
        Some("http") => {}
        Some(other) => return Err(ExportError::Scheme(other.to_string())),
        None => return Err(ExportError::Scheme(String::new())),
    }
    if endpoint.authority().is_none() {
        return Err(ExportError::NoHost);
    }
    let has_path = !matches!(endpoint.path(), "" | "/") || endpoint.query().is_some();
    let path_and_query = match (protocol, endpoint.path_and_query()) {
        (OtlpProtocol::Grpc, _) if has_path => return Err(ExportError::GrpcPath),
        (OtlpProtocol::Grpc, _) => PathAndQuery::from_static(EXPORT_PATH),
        (OtlpProtocol::Http, Some(given)) if has_path => given.clone(),
        (OtlpProtocol::Http, _) => PathAndQuery::from_static(HTTP_PATH),
    };
    let mut parts = endpoint.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).map_err(|_| ExportError::NoHost)
}

fn accepted(message: Option<&[u8]>) -> Accepted {
    let rejected = message
        .and_then(|m| ExportTraceServiceResponse::decode(m).ok())
        .and_then(|r| r.partial_success)
        .map_or(0, |p| u64::try_from(p.rejected_spans).unwrap_or(0));
    Accepted { rejected }
}

/// gRPC's length-prefixed message, uncompressed.
fn grpc_frame(message: &[u8]) -> Result<Bytes, ExportError> {
    let len = u32::try_from(message.len()).map_err(|_| ExportError::TooLarge)?;
    let mut framed = BytesMut::with_capacity(5 + message.len());
    framed.put_u8(0);
    framed.put_u32(len);
    framed.put_slice(message);
    Ok(framed.freeze())
}

/// The message of a gRPC answer (an empty answer has none).
fn unframe(body: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?);
    body.get(5..5 + usize::try_from(len).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(endpoint: &str, protocol: OtlpProtocol) -> Result<String, ExportError> {
        traces_uri(&endpoint.parse().unwrap(), protocol).map(|u| u.to_string())
    }

    #[test]
    fn endpoints_become_export_urls() {
        assert_eq!(
            uri("http://collector:4317", OtlpProtocol::Grpc).unwrap(),
            "http://collector:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export"
        );
        assert_eq!(
            uri("http://collector:4318", OtlpProtocol::Http).unwrap(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            uri("http://collector:4318/custom/traces", OtlpProtocol::Http).unwrap(),
            "http://collector:4318/custom/traces"
        );
        assert!(matches!(
            uri("https://collector:4317", OtlpProtocol::Grpc),
            Err(ExportError::Scheme(_))
        ));
        assert!(matches!(
            uri("http://collector:4317/x", OtlpProtocol::Grpc),
            Err(ExportError::GrpcPath)
        ));
        assert!(matches!(
            uri("/v1/traces", OtlpProtocol::Http),
            Err(ExportError::Scheme(_))
        ));
    }
}
