//! A Service's virtual address for a test that has no kube-proxy: a TCP
//! listener inside a network namespace that hands each new connection to
//! the next endpoint in turn (kube-proxy also picks one endpoint per
//! connection) and copies bytes both ways. Used where the product relies
//! on a ClusterIP Service in front of several pods, as the config stream
//! does in front of the controller replicas.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, anyhow};
use nix::sched::{CloneFlags, setns};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Stops listening on drop (connections already handed over run on).
pub struct ServiceVip {
    address: SocketAddr,
    netns: String,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    acceptor: Option<JoinHandle<()>>,
}

impl ServiceVip {
    /// Listens on `address` inside `netns` (an `ip netns` name); threads
    /// started from the acceptor inherit its namespace, so the endpoints
    /// are dialled from there too.
    pub fn start(
        netns: &str,
        address: SocketAddr,
        endpoints: Vec<SocketAddr>,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(!endpoints.is_empty(), "a Service without endpoints");
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let path = format!("/run/netns/{netns}");
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let acceptor = {
            let (stop, accepted) = (stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                let listener = File::open(&path)
                    .with_context(|| format!("cannot open {path}"))
                    .and_then(|f| setns(&f, CloneFlags::CLONE_NEWNET).context("setns"))
                    .and_then(|()| {
                        TcpListener::bind(address).with_context(|| format!("bind {address}"))
                    });
                let listener = match listener {
                    Ok(listener) => {
                        let _ = bound_tx.send(Ok(()));
                        listener
                    }
                    Err(e) => {
                        let _ = bound_tx.send(Err(e));
                        return;
                    }
                };
                accept_loop(&listener, &endpoints, &stop, &accepted);
            })
        };
        bound_rx
            .recv()
            .map_err(|_| anyhow!("the Service's acceptor thread ended"))??;
        Ok(ServiceVip {
            address,
            netns: netns.to_string(),
            stop,
            accepted,
            acceptor: Some(acceptor),
        })
    }

    /// Connections handed to an endpoint so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }
}

fn accept_loop(
    listener: &TcpListener,
    endpoints: &[SocketAddr],
    stop: &AtomicBool,
    accepted: &AtomicU64,
) {
    let mut next = 0usize;
    for client in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(client) = client else { continue };
        let endpoint = endpoints[next % endpoints.len()];
        next += 1;
        accepted.fetch_add(1, Ordering::Relaxed);
        std::thread::spawn(move || {
            // An endpoint that is down refuses, as behind a real Service
            // whose endpoint is not ready yet: the client sees a reset.
            let Ok(upstream) = TcpStream::connect_timeout(&endpoint, CONNECT_TIMEOUT) else {
                return;
            };
            splice(client, upstream);
        });
    }
}

/// Copies both ways until each side has said all it will.
fn splice(client: TcpStream, upstream: TcpStream) {
    let (Ok(client_read), Ok(upstream_write)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let forward = std::thread::spawn(move || copy(client_read, upstream_write));
    copy(upstream, client);
    let _ = forward.join();
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl Drop for ServiceVip {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the blocked accept with a connection of our own.
        let (path, address) = (format!("/run/netns/{}", self.netns), self.address);
        let _ = std::thread::spawn(move || {
            if let Ok(file) = File::open(&path)
                && setns(&file, CloneFlags::CLONE_NEWNET).is_ok()
            {
                let _ = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT);
            }
        })
        .join();
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}
