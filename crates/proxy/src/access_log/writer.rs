//! The writer: a thread of its own that formats queued records and writes
//! them through a buffer, so no request task ever formats a line or waits
//! on a file or a pipe. The queue is bounded: when the writer falls behind
//! (a slow disk, a full pipe), records are dropped and counted instead.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use super::format::{AccessLogFormat, LineFormatter};
use super::record::Record;

/// Records waiting for the writer; past this many new ones are dropped.
pub const QUEUE: usize = 16 * 1024;

/// Bytes buffered before a write, when records come faster than that.
const BUFFER: usize = 64 * 1024;

/// Where records go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessLogTarget {
    Off,
    Stdout,
    Stderr,
    /// Appended to (created when missing).
    File(PathBuf),
}

/// Records that were never written, by why.
#[derive(Debug, Default)]
pub struct LogCounters {
    queue_full: AtomicU64,
    write_failed: AtomicU64,
}

impl LogCounters {
    pub fn render(&self, out: &mut String) {
        let name = "coxswain_proxy_access_log_dropped_total";
        let _ = writeln!(
            out,
            "# HELP {name} Access-log records not written: the writer's queue was full, or the write failed.\n# TYPE {name} counter"
        );
        for (reason, n) in [
            ("queue_full", &self.queue_full),
            ("write_failed", &self.write_failed),
        ] {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{reason}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
    }
}

/// The request side of the queue.
#[derive(Clone, Debug)]
pub struct Queue {
    sender: SyncSender<Box<Record>>,
    counters: Arc<LogCounters>,
}

impl Queue {
    /// Hands `record` to the writer without waiting; dropped (and
    /// counted) when the queue is full.
    pub fn push(&self, record: Box<Record>) {
        match self.sender.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.counters.queue_full.fetch_add(1, Ordering::Relaxed);
            }
            // The writer is gone (its output failed for good).
            Err(TrySendError::Disconnected(_)) => {
                self.counters.write_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Opens `path` for appending: what `--access-log PATH` checks at start.
pub fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Starts the writer thread for `target`; `None` when logging is off.
pub fn start(
    target: &AccessLogTarget,
    format: AccessLogFormat,
    counters: Arc<LogCounters>,
) -> io::Result<Option<Queue>> {
    let out: Box<dyn Write + Send> = match target {
        AccessLogTarget::Off => return Ok(None),
        AccessLogTarget::Stdout => Box::new(io::stdout()),
        AccessLogTarget::Stderr => Box::new(io::stderr()),
        AccessLogTarget::File(path) => Box::new(open(path)?),
    };
    let (sender, receiver) = sync_channel(QUEUE);
    let thread_counters = counters.clone();
    std::thread::Builder::new()
        .name("access-log".into())
        .spawn(move || run(receiver, out, format, &thread_counters))?;
    Ok(Some(Queue { sender, counters }))
}

/// How long the writer lets records gather once it is busy.
const BATCH_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// Writes until every sender is gone. Everything queued is written before
/// a flush, so a burst costs one write per buffer, and a quiet period
/// leaves nothing unflushed.
fn run(
    receiver: Receiver<Box<Record>>,
    out: Box<dyn Write + Send>,
    format: AccessLogFormat,
    counters: &LogCounters,
) {
    let mut out = BufWriter::with_capacity(BUFFER, out);
    let mut line = String::with_capacity(1024);
    let mut formatter = LineFormatter::default();
    while let Ok(first) = receiver.recv() {
        let mut pending = 0u64;
        let mut next = Some(first);
        loop {
            while let Some(record) = next {
                line.clear();
                formatter.write(format, &record, &mut line);
                pending += 1;
                if out.write_all(line.as_bytes()).is_err() {
                    counters.write_failed.fetch_add(pending, Ordering::Relaxed);
                    pending = 0;
                }
                next = receiver.try_recv().ok();
            }
            // Under load more records are on their way: not waiting for
            // them in `recv` means senders do not wake this thread (a
            // futex call on the request path) and writes go out a buffer
            // at a time, not a line at a time.
            // Parked, not sleeping: nothing unparks it, so this is a pause
            // of at most BATCH_TICK that senders never have to end.
            std::thread::park_timeout(BATCH_TICK);
            next = receiver.try_recv().ok();
            if next.is_none() {
                break;
            }
        }
        if out.flush().is_err() {
            counters.write_failed.fetch_add(pending, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::fields::FieldSet;
    use crate::access_log::record::Kind;

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let (sender, _receiver) = sync_channel(1);
        let counters = Arc::new(LogCounters::default());
        let queue = Queue {
            sender,
            counters: counters.clone(),
        };
        for _ in 0..3 {
            queue.push(Box::new(Record::new(Kind::Tcp, FieldSet::ALL)));
        }
        let mut out = String::new();
        counters.render(&mut out);
        assert!(
            out.contains("coxswain_proxy_access_log_dropped_total{reason=\"queue_full\"} 2"),
            "{out}"
        );
    }
}
