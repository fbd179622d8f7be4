//! OpenTelemetry tracing: W3C trace context in and out, a server span per
//! request, a client span per upstream attempt and per authorization
//! check, exported over OTLP (gRPC or HTTP/protobuf) off the request path.
//!
//! A request task only fills in a span and hands it to a bounded queue
//! ([`Tracer::record`], never waiting); when the queue is full the span is
//! dropped and counted. The exporter task ([`export`]) sends batches and
//! retries a failed one with backoff. Without an endpoint there is no
//! [`Tracer`] at all and requests pass their trace headers through
//! untouched.

mod attempt;
mod check;
pub mod context;
mod export;
mod metrics;
mod route;
mod sampler;
mod scope;
mod server;
mod span;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

pub use attempt::AttemptSpan;
pub use check::CheckSpan;
pub use export::{ExportError, OtlpProtocol};
pub use metrics::TraceMetrics;
pub use route::route_info;
pub use sampler::Sampler;
pub use scope::{ChildSpan, TraceScope};
pub use server::{Arrival, RouteInfo, ServerSpan, method_name};
pub use span::{SpanData, SpanKind, Value};

/// Where and how spans are exported.
#[derive(Clone, Debug)]
pub struct TracingOptions {
    /// `http://host:port` (gRPC), or the OTLP/HTTP base URL (`/v1/traces`
    /// is added when it has no path) or full traces URL.
    pub endpoint: http::Uri,
    pub protocol: OtlpProtocol,
    /// The share of new traces recorded (0 to 1); a client's sampled flag
    /// decides for the traces it continues.
    pub sample_ratio: f64,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Spans waiting for export; beyond it new ones are dropped.
    pub queue_size: usize,
    /// Spans per export call.
    pub batch_size: usize,
    /// The longest a span waits for its batch to fill.
    pub batch_interval: Duration,
    /// One export call's limit (the receiver's answer included).
    pub export_timeout: Duration,
}

impl TracingOptions {
    /// Whether spans can be sent where the options say (the URL's
    /// scheme and shape): checked before the gateway starts.
    pub fn check(&self) -> Result<(), ExportError> {
        export::traces_uri(&self.endpoint, self.protocol).map(|_| ())
    }

    /// Defaults for everything but where spans go.
    pub fn new(endpoint: http::Uri, protocol: OtlpProtocol) -> Self {
        TracingOptions {
            endpoint,
            protocol,
            sample_ratio: 1.0,
            service_name: "coxswain".into(),
            queue_size: 2048,
            batch_size: 512,
            batch_interval: Duration::from_secs(1),
            export_timeout: Duration::from_secs(10),
        }
    }
}

/// What the exporter task receives.
enum Message {
    Span(Box<SpanData>),
    /// Export what came before, then answer.
    Flush(oneshot::Sender<()>),
}

/// The handle request tasks record spans with. Cheap to clone.
#[derive(Clone)]
pub struct Tracer {
    inner: Arc<Inner>,
}

struct Inner {
    queue: mpsc::Sender<Message>,
    sampler: Sampler,
    metrics: Arc<TraceMetrics>,
}

impl Tracer {
    /// Starts the exporter task (on the current Tokio runtime).
    pub fn start(
        options: &TracingOptions,
        metrics: Arc<TraceMetrics>,
    ) -> Result<Self, ExportError> {
        let exporter = export::Exporter::new(options, metrics.clone())?;
        let (queue, receiver) = mpsc::channel(options.queue_size.max(1));
        tokio::spawn(exporter.run(receiver));
        Ok(Tracer {
            inner: Arc::new(Inner {
                queue,
                sampler: Sampler::new(options.sample_ratio),
                metrics,
            }),
        })
    }

    /// Queues a finished span; never waits (a full queue drops it).
    pub fn record(&self, span: SpanData) {
        match self.inner.queue.try_send(Message::Span(Box::new(span))) {
            Ok(()) => {}
            Err(_) => self.inner.metrics.dropped_queue_full(),
        }
    }

    /// Waits (at most `within`) until the spans queued so far are exported
    /// or given up on: at shutdown.
    pub async fn flush(&self, within: Duration) {
        let (done, finished) = oneshot::channel();
        let flushed = async {
            if self.inner.queue.send(Message::Flush(done)).await.is_ok() {
                let _ = finished.await;
            }
        };
        if tokio::time::timeout(within, flushed).await.is_err() {
            tracing::warn!("spans not exported before shutdown");
        }
    }
}

/// A random, non-zero trace id.
fn trace_id() -> [u8; 16] {
    loop {
        let id: [u8; 16] = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

/// A random, non-zero span id.
fn span_id() -> [u8; 8] {
    loop {
        let id: [u8; 8] = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}
