//! The record of an L4 connection (TCP, TLS passthrough, TLS terminated
//! to a TCP backend) or a UDP session, sent when it ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use coxswain_ir::RouteId;

use super::AccessLog;
use super::record::{Kind, Record};
use super::settings::ListenerTag;
use super::writer::Queue;
use crate::listen::TlsInfo;

/// One connection's (session's) record; empty when it is not logged.
pub struct ConnectionLog {
    started: Instant,
    record: Option<(Box<Record>, Queue)>,
}

impl ConnectionLog {
    /// Decides, by `listener`'s settings, whether this connection is
    /// logged, and notes who it is from.
    pub fn start(
        log: &AccessLog,
        kind: Kind,
        listener: Option<&Arc<ListenerTag>>,
        client: SocketAddr,
        tls: Option<&TlsInfo>,
    ) -> Self {
        let record = log.queue().and_then(|queue| {
            let fields = log.settings(listener.map(Arc::as_ref)).sampled()?;
            let mut record = Box::new(Record::new(kind, fields));
            record.listener = listener.cloned();
            record.client_ip = Some(client.ip());
            if let Some(tls) = tls {
                record.tls_version = tls.version;
                record.sni = tls.sni.clone();
            }
            Some((record, queue.clone()))
        });
        ConnectionLog {
            started: Instant::now(),
            record,
        }
    }

    /// Not logged (tests, and connections nothing is configured for).
    pub fn none() -> Self {
        ConnectionLog {
            started: Instant::now(),
            record: None,
        }
    }

    pub fn routed(&mut self, route: &Arc<RouteId>) {
        if let Some((record, _)) = &mut self.record {
            record.route = Some(route.clone());
        }
    }

    /// The backend endpoint it reached, and how long connecting took
    /// (from the start of the connection: route and backend choice too).
    pub fn connected(&mut self, endpoint: SocketAddr, retries: u32) {
        let elapsed = self.started.elapsed();
        if let Some((record, _)) = &mut self.record {
            record.upstream = Some(endpoint);
            record.upstream_connect = Some(elapsed);
            record.retries = retries;
        }
    }

    /// Why the gateway closed it without a backend (`no_route`, ...).
    pub fn refused(&mut self, why: &'static str) {
        if let Some((record, _)) = &mut self.record {
            record.answered_by = Some(why);
        }
    }

    /// Sends the record: `received` bytes from the client, `sent` to it.
    pub fn finish(mut self, received: u64, sent: u64) {
        self.send(received, sent, self.started.elapsed());
    }

    fn send(&mut self, received: u64, sent: u64, duration: Duration) {
        if let Some((mut record, queue)) = self.record.take() {
            record.bytes_received = received;
            record.bytes_sent = sent;
            record.duration = duration;
            queue.push(record);
        }
    }
}

impl Drop for ConnectionLog {
    /// A connection refused early (or whose task was cut off at shutdown)
    /// is logged with what was known.
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        self.send(0, 0, elapsed);
    }
}
