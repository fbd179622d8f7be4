//! The exporter against a real HTTP receiver on loopback, and the queue's
//! drop-and-count.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost::Message;
use tokio::sync::mpsc;

use super::export::proto::ExportTraceServiceRequest;
use super::span::{Recorder, SpanKind};
use super::*;

fn span(n: u8) -> SpanData {
    Recorder::start(([n; 16], [n; 8]), None, "GET".into(), SpanKind::Server).end()
}

fn rendered(metrics: &TraceMetrics) -> String {
    let mut out = String::new();
    metrics.render(&mut out);
    out
}

/// An OTLP/HTTP receiver that refuses the first `refusals` calls with
/// 503, then accepts; it counts the spans it accepted.
async fn receiver(refusals: usize) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (calls, accepted) = (calls.clone(), accepted.clone());
            let service = service_fn(move |req: Request<Incoming>| {
                let (calls, accepted) = (calls.clone(), accepted.clone());
                async move {
                    assert_eq!(req.uri().path(), "/v1/traces");
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    let message = ExportTraceServiceRequest::decode(body).unwrap();
                    let status = if calls.fetch_add(1, Ordering::SeqCst) < refusals {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        let spans = message.resource_spans[0].scope_spans[0].spans.len();
                        accepted.fetch_add(spans, Ordering::SeqCst);
                        StatusCode::OK
                    };
                    let mut response = Response::new(Full::new(Bytes::new()));
                    *response.status_mut() = status;
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(
                hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .into_owned(),
            );
        }
    });
    (addr, counted)
}

fn options(addr: std::net::SocketAddr) -> TracingOptions {
    let endpoint = format!("http://{addr}").parse().unwrap();
    TracingOptions {
        batch_interval: std::time::Duration::from_millis(5),
        ..TracingOptions::new(endpoint, OtlpProtocol::Http)
    }
}

#[tokio::test]
async fn a_refused_batch_is_sent_again_and_counted_once() {
    let (addr, accepted) = receiver(2).await;
    let metrics = Arc::new(TraceMetrics::default());
    let tracer = Tracer::start(&options(addr), metrics.clone()).unwrap();
    tracer.record(span(1));
    tracer.record(span(2));
    tracer.flush(std::time::Duration::from_secs(20)).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    let out = rendered(&metrics);
    assert!(
        out.contains("coxswain_proxy_trace_spans_exported_total 2\n"),
        "{out}"
    );
    assert!(
        out.contains("coxswain_proxy_trace_export_failures_total 2\n"),
        "{out}"
    );
    assert!(out.contains("coxswain_proxy_trace_spans_dropped_total{reason=\"export_failed\"} 0\n"));
}

#[tokio::test]
async fn a_receiver_that_never_accepts_costs_the_batch_not_the_gateway() {
    let (addr, accepted) = receiver(usize::MAX).await;
    let metrics = Arc::new(TraceMetrics::default());
    let tracer = Tracer::start(&options(addr), metrics.clone()).unwrap();
    tracer.record(span(1));
    tracer.flush(std::time::Duration::from_secs(20)).await;
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
    let out = rendered(&metrics);
    assert!(
        out.contains("coxswain_proxy_trace_spans_dropped_total{reason=\"export_failed\"} 1\n"),
        "{out}"
    );
    assert!(
        out.contains("coxswain_proxy_trace_export_failures_total 5\n"),
        "{out}"
    );
}

#[test]
fn a_full_queue_drops_and_counts_without_waiting() {
    let (queue, _held) = mpsc::channel(1);
    let metrics = Arc::new(TraceMetrics::default());
    let tracer = Tracer {
        inner: Arc::new(Inner {
            queue,
            sampler: Sampler::new(1.0),
            metrics: metrics.clone(),
        }),
    };
    tracer.record(span(1));
    tracer.record(span(2));
    tracer.record(span(3));
    let out = rendered(&metrics);
    assert!(
        out.contains("coxswain_proxy_trace_spans_dropped_total{reason=\"queue_full\"} 2\n"),
        "{out}"
    );
}
