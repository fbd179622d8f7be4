//! One request's trace context as the pipeline sees it: the server span's
//! ids, whether the trace is recorded, and the child spans (upstream
//! attempts, authorization checks) that hang under it.

use std::borrow::Cow;

use http::{HeaderMap, HeaderValue};

use super::Tracer;
use super::context::{SAMPLED, TRACEPARENT, TRACESTATE, traceparent};
use super::span::{Recorder, SpanKind, Value};

/// The request's trace: the ids every span of this request shares.
pub struct TraceScope {
    pub(super) tracer: Tracer,
    pub(super) trace_id: [u8; 16],
    /// The gateway's server span, parent of every child span.
    pub(super) span_id: [u8; 8],
    pub(super) sampled: bool,
    /// The client's `tracestate`, forwarded with a valid parent.
    pub(super) tracestate: Option<HeaderValue>,
}

impl TraceScope {
    pub fn trace_id(&self) -> &[u8; 16] {
        &self.trace_id
    }

    pub fn sampled(&self) -> bool {
        self.sampled
    }

    /// A client span under the server span, recorded when the trace is.
    /// It ends (and is queued for export) when dropped.
    pub fn child(&self, name: impl Into<Cow<'static, str>>) -> ChildSpan<'_> {
        let span_id = super::span_id();
        let recorder = self.sampled.then(|| {
            let mut recorder = Recorder::start(
                (self.trace_id, span_id),
                Some(self.span_id),
                name.into(),
                SpanKind::Client,
            );
            recorder.data.trace_state = self.tracestate.clone();
            recorder
        });
        ChildSpan {
            scope: self,
            span_id,
            recorder,
        }
    }

    /// Sets `traceparent` (naming `span_id` as the parent of what the
    /// receiver does) and the client's `tracestate`, replacing the
    /// client's own.
    pub(super) fn inject(&self, span_id: &[u8; 8], headers: &mut HeaderMap) {
        let flags = if self.sampled { SAMPLED } else { 0 };
        headers.insert(TRACEPARENT, traceparent(&self.trace_id, span_id, flags));
        match &self.tracestate {
            Some(state) => {
                headers.insert(TRACESTATE, state.clone());
            }
            None => {
                headers.remove(TRACESTATE);
            }
        }
    }
}

/// A call the gateway makes on a request's behalf.
pub struct ChildSpan<'s> {
    scope: &'s TraceScope,
    span_id: [u8; 8],
    /// `None` when the trace is not recorded: ids only, for propagation.
    recorder: Option<Recorder>,
}

impl ChildSpan<'_> {
    /// Makes this span the parent of what the call's receiver records.
    pub fn inject(&self, headers: &mut HeaderMap) {
        self.scope.inject(&self.span_id, headers);
    }

    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if let Some(recorder) = &mut self.recorder {
            recorder.set(key, value);
        }
    }

    /// Marks the call failed, with `error.type` set to `kind`.
    pub fn fail(&mut self, kind: impl Into<Value>, why: impl Into<Cow<'static, str>>) {
        if let Some(recorder) = &mut self.recorder {
            recorder.set("error.type", kind);
            recorder.fail(why);
        }
    }
}

impl Drop for ChildSpan<'_> {
    fn drop(&mut self) {
        if let Some(recorder) = self.recorder.take() {
            self.scope.tracer.record(recorder.end());
        }
    }
}
