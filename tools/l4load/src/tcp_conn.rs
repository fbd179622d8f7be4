//! tcp-conn: connect, send a small request, read the echo, close; repeat.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

use crate::cli::ConnArgs;
use crate::run::{Shared, exchange, micros_since, payload, round, run_workers};

pub async fn run(args: ConnArgs) -> anyhow::Result<Value> {
    let shared = Shared::new(&args.load);
    let target = args.load.target;
    let request: Arc<[u8]> = payload(args.size as usize).into();
    let elapsed = run_workers(&shared, args.load.concurrency, |shared| {
        worker(shared, target, request.clone())
    })
    .await;
    Ok(conn_report("tcp-conn", &args, &shared, elapsed))
}

async fn worker(shared: Arc<Shared>, target: SocketAddr, request: Arc<[u8]>) {
    let mut reply = vec![0u8; request.len()];
    let mut latencies = Vec::new();
    while shared.running() {
        let began = Instant::now();
        match timeout(shared.op_timeout, once(target, &request, &mut reply)).await {
            Ok(Ok(())) => {
                latencies.push(micros_since(began));
                Shared::count(&shared.ok, 1);
            }
            Ok(Err(e)) => shared.error(e),
            Err(_) => shared.error("timed out"),
        }
    }
    shared.add_latencies(&latencies);
}

async fn once(target: SocketAddr, request: &[u8], reply: &mut [u8]) -> io::Result<()> {
    let mut stream = TcpStream::connect(target).await?;
    stream.set_nodelay(true)?;
    exchange(&mut stream, request, reply).await
}

/// The JSON line of the connection modes (tcp-conn and tls-conn).
pub fn conn_report(
    mode: &str,
    args: &ConnArgs,
    shared: &Shared,
    elapsed: std::time::Duration,
) -> Value {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let ok = Shared::get(&shared.ok);
    let (p50, p99) = shared.percentiles_ms();
    json!({
        "mode": mode,
        "target": args.load.target.to_string(),
        "concurrency": args.load.concurrency,
        "size": args.size,
        "elapsed_s": round(secs, 3),
        "connections": ok,
        "connections_per_s": round(ok as f64 / secs, 1),
        "errors": Shared::get(&shared.errors),
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "first_error": shared.first_error(),
    })
}
