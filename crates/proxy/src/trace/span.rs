//! A finished span as the exporter takes it, and the recorder that fills
//! one in while its operation runs.

use std::borrow::Cow;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use http::HeaderValue;

/// What a span stands for (OTLP `SpanKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// The gateway answering a client's request.
    Server,
    /// A call the gateway makes: an upstream attempt, an authorization check.
    Client,
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(Cow<'static, str>),
    Int(i64),
    Bool(bool),
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Self {
        Value::Str(Cow::Borrowed(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Cow::Owned(s))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<u16> for Value {
    fn from(n: u16) -> Self {
        Value::Int(i64::from(n))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::Int(i64::from(n))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

/// One finished span.
#[derive(Clone, Debug)]
pub struct SpanData {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    /// The parent came from the client's `traceparent`.
    pub remote_parent: bool,
    /// The W3C trace flags (the sampled bit).
    pub flags: u8,
    pub trace_state: Option<HeaderValue>,
    pub name: Cow<'static, str>,
    pub kind: SpanKind,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
    pub attributes: Vec<(&'static str, Value)>,
    /// Set when the operation failed, with a short description.
    pub error: Option<Cow<'static, str>>,
}

/// A span being recorded: its start on the wall clock (what the receiver
/// shows) and on the monotonic clock (what its duration is measured by).
#[derive(Debug)]
pub struct Recorder {
    pub data: SpanData,
    started: Instant,
}

impl Recorder {
    pub fn start(
        ids: ([u8; 16], [u8; 8]),
        parent: Option<[u8; 8]>,
        name: Cow<'static, str>,
        kind: SpanKind,
    ) -> Self {
        let (trace_id, span_id) = ids;
        Recorder {
            data: SpanData {
                trace_id,
                span_id,
                parent_span_id: parent,
                remote_parent: false,
                flags: super::context::SAMPLED,
                trace_state: None,
                name,
                kind,
                start_unix_nanos: unix_nanos(SystemTime::now()),
                end_unix_nanos: 0,
                attributes: Vec::with_capacity(16),
                error: None,
            },
            started: Instant::now(),
        }
    }

    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        self.data.attributes.push((key, value.into()));
    }

    /// Marks the span failed (OTLP status ERROR).
    pub fn fail(&mut self, why: impl Into<Cow<'static, str>>) {
        self.data.error = Some(why.into());
    }

    /// The span, ended now.
    pub fn end(mut self) -> SpanData {
        let elapsed = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.data.end_unix_nanos = self.data.start_unix_nanos.saturating_add(elapsed);
        self.data
    }
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
        .unwrap_or(0)
}
