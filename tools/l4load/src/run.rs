//! What every load mode shares: counters, the bounded worker pool, latency
//! percentiles and the request/echo exchange.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cli::LoadArgs;

/// Counters the workers of one run update.
pub struct Shared {
    pub start: Instant,
    /// No worker starts an operation after this instant.
    pub deadline: Instant,
    pub op_timeout: Duration,
    pub ok: AtomicU64,
    pub errors: AtomicU64,
    pub sent: AtomicU64,
    pub received: AtomicU64,
    latencies_us: Mutex<Vec<u32>>,
    first_error: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(load: &LoadArgs) -> Arc<Self> {
        let start = Instant::now();
        Arc::new(Shared {
            start,
            deadline: start + Duration::from_secs_f64(load.duration.max(0.0)),
            op_timeout: Duration::from_millis(load.timeout_ms),
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            latencies_us: Mutex::new(Vec::new()),
            first_error: Mutex::new(None),
        })
    }

    pub fn running(&self) -> bool {
        Instant::now() < self.deadline
    }

    pub fn count(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn error(&self, what: impl std::fmt::Display) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.note(what);
    }

    /// Keeps `what` as the first error if there was none, without counting
    /// it (for failures a mode counts under its own name).
    pub fn note(&self, what: impl std::fmt::Display) {
        let mut first = self
            .first_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(what.to_string());
        }
    }

    /// Hands over a worker's latency samples (microseconds).
    pub fn add_latencies(&self, samples: &[u32]) {
        self.latencies_us
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(samples);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn first_error(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// (p50, p99) in milliseconds, 0 without samples.
    pub fn percentiles_ms(&self) -> (f64, f64) {
        let mut samples = self
            .latencies_us
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if samples.is_empty() {
            return (0.0, 0.0);
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let i = ((samples.len() as f64 * q) as usize).min(samples.len() - 1);
            f64::from(samples[i]) / 1000.0
        };
        (at(0.50), at(0.99))
    }
}

/// Microseconds since `since`, saturating.
pub fn micros_since(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_micros()).unwrap_or(u32::MAX)
}

/// Runs `concurrency` copies of `worker` and waits for them, at most until
/// the deadline plus one operation timeout and a second; stragglers are
/// aborted. Returns the wall time from start until then.
pub async fn run_workers<F, Fut>(shared: &Arc<Shared>, concurrency: u32, worker: F) -> Duration
where
    F: Fn(Arc<Shared>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut set = JoinSet::new();
    for _ in 0..concurrency {
        set.spawn(worker(shared.clone()));
    }
    let hard_stop = shared.deadline + shared.op_timeout + Duration::from_secs(1);
    while let Ok(Some(_)) = tokio::time::timeout_at(hard_stop, set.join_next()).await {}
    set.abort_all();
    shared.start.elapsed()
}

/// Writes `request`, reads exactly as many bytes back and checks they are
/// the same (the origins echo).
pub async fn exchange<S>(stream: &mut S, request: &[u8], reply: &mut [u8]) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    stream.write_all(request).await?;
    let mut got = 0;
    while got < reply.len() {
        let n = stream.read(&mut reply[got..]).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("EOF after {got} of {} bytes", reply.len()),
            ));
        }
        got += n;
    }
    if reply != request {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "reply differs from request",
        ));
    }
    Ok(())
}

/// A recognisable payload of `size` bytes.
pub fn payload(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

pub fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}
