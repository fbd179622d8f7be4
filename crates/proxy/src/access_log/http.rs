//! An HTTP request's record: started with the request, filled in as the
//! request is routed and answered, and sent to the writer when the
//! response body is done (or dropped: the client went away), so that
//! `bytes_sent`, `duration_ms` and a gRPC call's trailers are known.
//!
//! What deeper layers learn travels in the response's extensions, so the
//! pipeline does not carry the log around: [`UpstreamLog`] (the attempt
//! that answered), [`AnsweredBy`] (a filter that answered instead) and
//! [`ReceivedBytes`] (the request body as the client sent it).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use coxswain_ir::RouteId;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

use super::AccessLog;
use super::record::{Kind, Record, TraceId};
use super::settings::ListenerTag;
use super::tunnel::TunnelLog;
use crate::handler::ConnInfo;
use crate::http::body::{ClientBodyState, ProxyBody};
use crate::http::grpc::LocalReply;
use crate::http::grpc_status::status_in;

/// The backend attempt whose response the client got.
#[derive(Clone, Debug)]
pub struct UpstreamLog {
    pub endpoint: SocketAddr,
    /// When its response headers arrived.
    pub first_byte: Instant,
    /// What it spent opening its connection (zero on a reused one).
    pub connect: std::time::Duration,
    /// The trace id of the request as it was forwarded.
    pub trace_id: Option<TraceId>,
    /// Attempts made again before this one (one extension, not two: each
    /// costs the response an allocation).
    pub retries: u32,
}

/// Attempts made again before a local answer (retries, refused
/// connections); a backend's answer carries them in [`UpstreamLog`].
#[derive(Clone, Copy, Debug)]
pub struct Retries(pub u32);

/// The filter (or gateway check) that answered the request itself.
#[derive(Clone, Copy, Debug)]
pub struct AnsweredBy(pub &'static str);

/// The client's request body, as far as it was read.
#[derive(Clone)]
pub struct ReceivedBytes(pub ClientBodyState);

/// The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`).
pub fn trace_id(headers: &HeaderMap) -> Option<TraceId> {
    let value = headers.get("traceparent")?.as_bytes();
    let id = value.get(3..35)?;
    let well_formed = value.len() >= 55
        && value.get(2) == Some(&b'-')
        && value.get(35) == Some(&b'-')
        && id.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && id.iter().any(|b| *b != b'0');
    well_formed.then(|| {
        let mut out = [0u8; 32];
        out.copy_from_slice(id);
        out
    })
}

/// One request's record while it is served; nothing at all when logging
/// is off or the request is not sampled.
pub struct RequestLog {
    started: Instant,
    time: SystemTime,
    record: Option<Box<Record>>,
    /// Sampling was decided (once a listener was found, or not).
    decided: bool,
}

impl RequestLog {
    pub fn start(log: &AccessLog) -> Self {
        RequestLog {
            started: Instant::now(),
            time: if log.is_on() {
                SystemTime::now()
            } else {
                SystemTime::UNIX_EPOCH
            },
            record: None,
            // Nothing to decide when nothing is written.
            decided: !log.is_on(),
        }
    }

    /// Decides whether this request is logged, by `listener`'s settings
    /// (the defaults when none took it), and notes what the request is.
    /// Only the first call counts.
    pub fn admit<B>(
        &mut self,
        log: &AccessLog,
        listener: Option<&Arc<ListenerTag>>,
        req: &Request<B>,
        conn: &ConnInfo,
        host: &str,
    ) {
        if std::mem::replace(&mut self.decided, true) {
            return;
        }
        let Some(fields) = log.settings(listener.map(Arc::as_ref)).sampled() else {
            return;
        };
        let mut record = Box::new(Record::new(Kind::Http, fields));
        record.time = self.time;
        record.listener = listener.cloned();
        record.method = Some(req.method().clone());
        record.host = Some(host.to_string());
        record.path = Some(req.uri().path().to_string());
        record.protocol = Some(req.version());
        record.client_ip = Some(conn.client.ip());
        record.request_id = req.headers().get(super::X_REQUEST_ID).cloned();
        record.trace_id = trace_id(req.headers());
        if let Some(tls) = &conn.tls {
            record.tls_version = tls.version;
            record.sni = tls.sni.clone();
        }
        self.record = Some(record);
    }

    /// The route rule that took the request.
    pub fn routed(&mut self, route: &Arc<RouteId>) {
        if let Some(record) = &mut self.record {
            record.route = Some(route.clone());
        }
    }

    /// A check of the gateway's own answered (`overload`, `no_route`, ...).
    pub fn answered_by(&mut self, what: &'static str) {
        if let Some(record) = &mut self.record {
            record.answered_by = Some(what);
        }
    }

    /// Notes what `response`'s extensions tell: call before anything
    /// replaces the response (a gRPC error answer keeps none of them).
    pub fn observe(&mut self, response: &Response<ProxyBody>) {
        let Some(record) = &mut self.record else {
            return;
        };
        let extensions = response.extensions();
        if let Some(up) = extensions.get::<UpstreamLog>() {
            record.upstream = Some(up.endpoint);
            record.upstream_connect = Some(up.connect);
            record.upstream_first_byte =
                Some(up.first_byte.saturating_duration_since(self.started));
            if up.trace_id.is_some() {
                record.trace_id = up.trace_id;
            }
            record.retries = up.retries;
        }
        if let Some(Retries(n)) = extensions.get::<Retries>() {
            record.retries = *n;
        }
        if let Some(AnsweredBy(what)) = extensions.get::<AnsweredBy>() {
            record.answered_by = Some(what);
        } else if record.answered_by.is_none() && extensions.get::<LocalReply>().is_some() {
            record.answered_by = Some("gateway");
        }
    }

    /// The response as the client gets it, its body watched so that the
    /// record is sent when it ends.
    pub fn finish(self, log: &AccessLog, response: Response<ProxyBody>) -> Response<ProxyBody> {
        let Some(mut record) = self.record else {
            return response;
        };
        let Some(queue) = log.queue() else {
            return response;
        };
        record.status = Some(response.status().as_u16());
        record.grpc_status = status_in(response.headers());
        let received = response.extensions().get::<ReceivedBytes>().cloned();
        let tunnel = response.extensions().get::<TunnelLog>().cloned();
        let queue = queue.clone();
        response.map(|inner| {
            LoggedBody {
                inner,
                pending: Some(Pending {
                    record,
                    started: self.started,
                    received,
                    queue,
                    tunnel,
                }),
            }
            .boxed_unsync()
        })
    }
}

/// What the record still needs once the body is done.
pub(super) struct Pending {
    pub(super) record: Box<Record>,
    started: Instant,
    received: Option<ReceivedBytes>,
    queue: super::writer::Queue,
    /// An upgraded request's tunnel, which the record waits for.
    tunnel: Option<TunnelLog>,
}

impl Pending {
    /// Completes the record and hands it to the writer.
    pub(super) fn send(mut self) {
        self.record.duration = self.started.elapsed();
        if let Some(ReceivedBytes(state)) = &self.received {
            self.record.bytes_received += state.bytes();
        }
        self.queue.push(self.record);
    }
}

/// A response body that counts its bytes, notes a gRPC call's trailers,
/// and sends the record when it is dropped.
struct LoggedBody {
    inner: ProxyBody,
    pending: Option<Pending>,
}

impl Body for LoggedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some(p)) = (&polled, self.pending.as_mut()) {
            if let Some(data) = frame.data_ref() {
                p.record.bytes_sent += data.len() as u64;
            } else if let Some(trailers) = frame.trailers_ref() {
                p.record.grpc_status = status_in(trailers).or(p.record.grpc_status);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for LoggedBody {
    fn drop(&mut self) {
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        match pending.tunnel.take() {
            Some(tunnel) => tunnel.hand_over(pending),
            None => pending.send(),
        }
    }
}

/// What a mirror copy's record starts from: the record of the request it
/// copies (so a copy is logged when its request is), carried in the
/// request's extensions to the forwarding phase.
#[derive(Clone)]
pub struct MirrorSeed(pub Arc<Record>);

impl MirrorSeed {
    /// A mirror copy's record, started now.
    pub fn record(&self) -> Box<Record> {
        let mut record = Box::new((*self.0).clone());
        record.time = SystemTime::now();
        record.mirror = true;
        record.answered_by = None;
        record
    }
}

impl RequestLog {
    /// The seed for the records of this request's mirror copies; `None`
    /// when the request is not logged.
    pub fn mirror_seed(&self) -> Option<MirrorSeed> {
        let record = self.record.as_deref()?;
        Some(MirrorSeed(Arc::new(record.clone())))
    }
}

/// The request id a response echoes, when configured.
pub fn echo_request_id(response: &mut Response<ProxyBody>, id: &HeaderValue) {
    response
        .headers_mut()
        .insert(super::X_REQUEST_ID, id.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_comes_from_a_well_formed_traceparent_only() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        assert_eq!(
            trace_id(&headers)
                .as_ref()
                .map(|t| std::str::from_utf8(t).unwrap()),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736",
            "garbage",
        ] {
            headers.insert("traceparent", HeaderValue::from_static(bad));
            assert_eq!(trace_id(&headers), None, "{bad}");
        }
    }
}
