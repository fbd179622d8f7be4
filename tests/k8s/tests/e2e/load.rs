//! Steady request load through the Gateway while a scenario changes the
//! cluster underneath: client threads in the node's network namespace,
//! each request on a fresh connection, every answer counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use coxswain_k8s_tests::netns_http::NetnsHttp;

/// What the load saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub sent: u64,
    /// Any answer but 200, or no answer at all, with the first few reasons.
    pub failed: u64,
    pub reasons: Vec<String>,
    pub seconds: f64,
}

pub struct Load {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    started: Instant,
    workers: Vec<JoinHandle<(u64, Vec<String>)>>,
}

const KEPT_REASONS: usize = 5;

impl Load {
    /// `clients` threads sending GET `path` to `address` back to back.
    pub fn start(http: &NetnsHttp, address: SocketAddr, path: &str, clients: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let workers = (0..clients)
            .map(|_| {
                let (stop, sent, http, path) =
                    (stop.clone(), sent.clone(), http.clone(), path.to_string());
                std::thread::spawn(move || {
                    let (mut failed, mut reasons) = (0, Vec::new());
                    while !stop.load(Ordering::Relaxed) {
                        let reason = match http.get(address, &path, &[]) {
                            Ok(r) if r.status == 200 => None,
                            Ok(r) => Some(format!("{} {}", r.status, r.body.trim())),
                            Err(e) => Some(format!("{e:#}")),
                        };
                        sent.fetch_add(1, Ordering::Relaxed);
                        if let Some(reason) = reason {
                            failed += 1;
                            if reasons.len() < KEPT_REASONS {
                                reasons.push(reason);
                            }
                        }
                    }
                    (failed, reasons)
                })
            })
            .collect();
        Load {
            stop,
            sent,
            started: Instant::now(),
            workers,
        }
    }

    /// Requests sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub fn finish(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        let mut tally = Tally::default();
        for worker in self.workers {
            let (failed, reasons) = worker
                .join()
                .unwrap_or((1, vec!["load thread panicked".into()]));
            tally.failed += failed;
            tally.reasons.extend(reasons);
        }
        tally.sent = self.sent.load(Ordering::Relaxed);
        tally.seconds = self.started.elapsed().as_secs_f64();
        tally
    }
}
