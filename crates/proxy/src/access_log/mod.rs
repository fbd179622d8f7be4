//! Access logs: one record per HTTP request, L4 connection and UDP
//! session, written off the request path (see [`writer`]). Field names and
//! formats are documented in docs/observability.md.

mod fields;
mod format;
pub mod http;
mod l4;
mod record;
mod settings;
mod tunnel;
mod writer;

use std::sync::Arc;

use coxswain_ir::AccessLogField;

pub use fields::FieldSet;
pub use format::AccessLogFormat;
pub use l4::ConnectionLog;
pub use record::{Kind, Record};
pub use settings::{ListenerTag, LogSettings};
pub use tunnel::{ClosesOnDrop, TunnelLog};
pub use writer::{AccessLogTarget, LogCounters, open};

/// The request id header: kept when a client sent a valid one, generated
/// otherwise, forwarded to backends.
pub const X_REQUEST_ID: ::http::HeaderName = ::http::HeaderName::from_static("x-request-id");

/// The `--access-log*` flags.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessLogOptions {
    pub target: AccessLogTarget,
    pub format: AccessLogFormat,
    /// The share of requests logged, 0 to 1.
    pub sample_ratio: f64,
    /// The fields records carry; empty: all of them.
    pub fields: Vec<AccessLogField>,
}

impl Default for AccessLogOptions {
    /// Off: a library user (a test) chooses to log; the binary's flags
    /// default to stdout.
    fn default() -> Self {
        AccessLogOptions {
            target: AccessLogTarget::Off,
            format: AccessLogFormat::Json,
            sample_ratio: 1.0,
            fields: Vec::new(),
        }
    }
}

/// The proxy's access log: the writer's queue and the default settings.
#[derive(Clone, Debug)]
pub struct AccessLog {
    queue: Option<writer::Queue>,
    defaults: LogSettings,
}

impl AccessLog {
    /// Starts the writer. An output that cannot be opened is reported
    /// and leaves the log off (the CLI checks a file before it gets here).
    pub fn start(options: &AccessLogOptions, counters: Arc<LogCounters>) -> Self {
        let queue = match writer::start(&options.target, options.format, counters) {
            Ok(queue) => queue,
            Err(e) => {
                tracing::error!(target = ?options.target, error = %e, "access log cannot be written: off");
                None
            }
        };
        let fields = match options.fields.as_slice() {
            [] => FieldSet::ALL,
            some => FieldSet::of(some),
        };
        AccessLog {
            defaults: LogSettings {
                enabled: queue.is_some(),
                sample: options.sample_ratio.clamp(0.0, 1.0),
                fields,
            },
            queue,
        }
    }

    /// No output: nothing is ever recorded.
    pub fn off() -> Self {
        AccessLog::start(&AccessLogOptions::default(), Arc::default())
    }

    pub fn is_on(&self) -> bool {
        self.queue.is_some()
    }

    /// What `listener`'s records get (the defaults when it sets nothing).
    pub fn settings(&self, listener: Option<&ListenerTag>) -> LogSettings {
        self.defaults.for_listener(listener)
    }

    fn queue(&self) -> Option<&writer::Queue> {
        self.queue.as_ref()
    }

    /// Hands a finished record to the writer.
    pub fn push(&self, record: Box<Record>) {
        if let Some(queue) = &self.queue {
            queue.push(record);
        }
    }
}
