//! The exporter task: takes spans off the queue, sends them in batches
//! (when a batch is full or its interval passed), retries a failed call
//! with doubling waits, and counts what it could not deliver.

mod encode;
pub(super) mod proto;
mod transport;

pub use transport::traces_uri;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{Message, TraceMetrics, TracingOptions};
use crate::trace::span::SpanData;
use proto::Resource;
use transport::Transport;

/// How spans reach the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/gRPC over h2c.
    Grpc,
    /// OTLP/HTTP with a protobuf body.
    Http,
}

/// Why an endpoint cannot be used, or an export call failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP endpoint scheme {0:?} is not supported (only http://)")]
    Scheme(String),
    #[error("OTLP endpoint has no host")]
    NoHost,
    #[error("an OTLP/gRPC endpoint has no path (its method's path is fixed)")]
    GrpcPath,
    #[error("OTLP receiver unreachable: {0}")]
    Unreachable(String),
    #[error("OTLP export timed out")]
    TimedOut,
    #[error("OTLP receiver answered HTTP {0}")]
    Status(u16, bool),
    #[error("OTLP receiver answered grpc-status {0}")]
    Grpc(u32, bool),
    #[error("OTLP export request too large")]
    TooLarge,
}

impl ExportError {
    /// Worth trying again later.
    fn retryable(&self) -> bool {
        match self {
            ExportError::Unreachable(_) | ExportError::TimedOut => true,
            ExportError::Status(_, retry) | ExportError::Grpc(_, retry) => *retry,
            ExportError::Scheme(_)
            | ExportError::NoHost
            | ExportError::GrpcPath
            | ExportError::TooLarge => false,
        }
    }
}

/// Tries of one batch before its spans are given up.
const ATTEMPTS: u32 = 5;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

pub struct Exporter {
    transport: Transport,
    resource: Resource,
    metrics: Arc<TraceMetrics>,
    batch_size: usize,
    interval: Duration,
}

impl Exporter {
    pub fn new(options: &TracingOptions, metrics: Arc<TraceMetrics>) -> Result<Self, ExportError> {
        Ok(Exporter {
            transport: Transport::new(&options.endpoint, options.protocol, options.export_timeout)?,
            resource: encode::resource(&options.service_name),
            metrics,
            batch_size: options.batch_size.max(1),
            interval: options.batch_interval,
        })
    }

    /// Runs until every [`super::Tracer`] is gone and the queue is empty.
    pub async fn run(self, mut queue: mpsc::Receiver<Message>) {
        let mut batch: Vec<SpanData> = Vec::with_capacity(self.batch_size);
        let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
        let mut open = true;
        while open {
            // The first span of a batch starts its interval.
            let Some(first) = queue.recv().await else {
                break;
            };
            self.take(first, &mut batch, &mut flushes);
            let deadline = Instant::now() + self.interval;
            while batch.len() < self.batch_size && flushes.is_empty() {
                match tokio::time::timeout_at(deadline, queue.recv()).await {
                    Ok(Some(message)) => self.take(message, &mut batch, &mut flushes),
                    Ok(None) => {
                        open = false;
                        break;
                    }
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.export(&batch).await;
                batch.clear();
            }
            for done in flushes.drain(..) {
                let _ = done.send(());
            }
        }
    }

    fn take(
        &self,
        message: Message,
        batch: &mut Vec<SpanData>,
        flushes: &mut Vec<oneshot::Sender<()>>,
    ) {
        match message {
            Message::Span(span) => batch.push(*span),
            Message::Flush(done) => flushes.push(done),
        }
    }

    /// Sends one batch, retrying as long as the failure is worth it.
    async fn export(&self, batch: &[SpanData]) {
        let spans = batch.len() as u64;
        let body = encode::request(&self.resource, batch);
        let mut wait = FIRST_BACKOFF;
        for attempt in 1..=ATTEMPTS {
            match self.transport.send(body.clone()).await {
                Ok(accepted) => {
                    let rejected = accepted.rejected.min(spans);
                    self.metrics.exported(spans - rejected);
                    if rejected > 0 {
                        self.metrics.rejected(rejected);
                        tracing::debug!(rejected, "OTLP receiver refused some spans");
                    }
                    return;
                }
                Err(e) => {
                    self.metrics.call_failed();
                    if !e.retryable() || attempt == ATTEMPTS {
                        tracing::warn!(error = %e, spans, "spans not exported");
                        self.metrics.export_failed(spans);
                        return;
                    }
                    tracing::debug!(error = %e, attempt, "OTLP export failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}
