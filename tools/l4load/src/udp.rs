//! udp: one connected socket (its own source port) per worker, each sending
//! a datagram and waiting for its echo; no echo within the timeout is a loss.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::net::UdpSocket;
use tokio::time::{Instant, timeout_at};

use crate::cli::UdpArgs;
use crate::run::{Shared, micros_since, payload, round, run_workers};

pub async fn run(args: UdpArgs) -> anyhow::Result<Value> {
    let shared = Shared::new(&args.load);
    let lost = Arc::new(AtomicU64::new(0));
    let target = args.load.target;
    let size = args.size as usize;
    let elapsed = run_workers(&shared, args.load.concurrency, |shared| {
        worker(shared, lost.clone(), target, size)
    })
    .await;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let ok = Shared::get(&shared.ok);
    let lost = lost.load(Ordering::Relaxed);
    let (p50, p99) = shared.percentiles_ms();
    Ok(json!({
        "mode": "udp",
        "target": target.to_string(),
        "concurrency": args.load.concurrency,
        "size": args.size,
        "timeout_ms": args.load.timeout_ms,
        "elapsed_s": round(secs, 3),
        "datagrams": ok,
        "datagrams_per_s": round(ok as f64 / secs, 1),
        "lost": lost,
        "loss_ratio": round(lost as f64 / (ok + lost).max(1) as f64, 5),
        "errors": Shared::get(&shared.errors),
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "first_error": shared.first_error(),
    }))
}

async fn worker(shared: Arc<Shared>, lost: Arc<AtomicU64>, target: SocketAddr, size: usize) {
    let any = if target.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    };
    let socket = match UdpSocket::bind((any, 0)).await {
        Ok(socket) => socket,
        Err(e) => return shared.error(e),
    };
    if let Err(e) = socket.connect(target).await {
        return shared.error(e);
    }
    let mut out = payload(size);
    let mut buf = vec![0u8; 65_536];
    let mut latencies = Vec::new();
    let mut seq: u64 = 0;
    while shared.running() {
        seq += 1;
        out[..8].copy_from_slice(&seq.to_be_bytes());
        let began = Instant::now();
        if let Err(e) = socket.send(&out).await {
            shared.error(e);
            continue;
        }
        let give_up = began + shared.op_timeout;
        loop {
            match timeout_at(give_up, socket.recv(&mut buf)).await {
                // A late echo of an earlier datagram: keep waiting for ours.
                Ok(Ok(n)) if n != size || buf[..8] != out[..8] => continue,
                Ok(Ok(_)) => {
                    latencies.push(micros_since(began));
                    Shared::count(&shared.ok, 1);
                }
                Ok(Err(e)) => shared.error(e),
                Err(_) => Shared::count(&lost, 1),
            }
            break;
        }
    }
    shared.add_latencies(&latencies);
}
