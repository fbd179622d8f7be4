//! tcp-stream: long-lived connections, each writing fixed-size chunks while
//! reading the echo back, until the deadline.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::time::{sleep_until, timeout};

use crate::cli::StreamArgs;
use crate::run::{Shared, payload, round, run_workers};

const MIB: f64 = 1024.0 * 1024.0;

pub async fn run(args: StreamArgs) -> anyhow::Result<Value> {
    let shared = Shared::new(&args.load);
    let target = args.load.target;
    let chunk: Arc<[u8]> = payload(args.chunk as usize).into();
    run_workers(&shared, args.load.concurrency, |shared| {
        worker(shared, target, chunk.clone())
    })
    .await;
    // Bytes are only counted until the deadline.
    let secs = (shared.deadline - shared.start).as_secs_f64().max(1e-9);
    let sent = Shared::get(&shared.sent);
    let received = Shared::get(&shared.received);
    Ok(json!({
        "mode": "tcp-stream",
        "target": target.to_string(),
        "concurrency": args.load.concurrency,
        "chunk": args.chunk,
        "elapsed_s": round(secs, 3),
        "connections": Shared::get(&shared.ok),
        "sent_bytes": sent,
        "received_bytes": received,
        "sent_mib_per_s": round(sent as f64 / MIB / secs, 2),
        "received_mib_per_s": round(received as f64 / MIB / secs, 2),
        "errors": Shared::get(&shared.errors),
        "first_error": shared.first_error(),
    }))
}

async fn worker(shared: Arc<Shared>, target: SocketAddr, chunk: Arc<[u8]>) {
    let stream = match timeout(shared.op_timeout, TcpStream::connect(target)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return shared.error(e),
        Err(_) => return shared.error("connect timed out"),
    };
    if let Err(e) = stream.set_nodelay(true) {
        return shared.error(e);
    }
    Shared::count(&shared.ok, 1);
    let (reader, writer) = stream.into_split();
    tokio::join!(
        write_until(&shared, writer, &chunk),
        read_until(&shared, reader)
    );
}

async fn write_until(shared: &Shared, mut writer: OwnedWriteHalf, chunk: &[u8]) {
    let stop = sleep_until(shared.deadline);
    tokio::pin!(stop);
    let mut offset = 0;
    loop {
        tokio::select! {
            biased;
            () = &mut stop => return,
            written = writer.write(&chunk[offset..]) => match written {
                Ok(0) => return shared.error("write returned 0"),
                Ok(n) => {
                    Shared::count(&shared.sent, n as u64);
                    offset = (offset + n) % chunk.len();
                }
                Err(e) => return shared.error(e),
            },
        }
    }
}

async fn read_until(shared: &Shared, mut reader: OwnedReadHalf) {
    let stop = sleep_until(shared.deadline);
    tokio::pin!(stop);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            biased;
            () = &mut stop => return,
            read = reader.read(&mut buf) => match read {
                Ok(0) => return shared.error("EOF before the deadline"),
                Ok(n) => Shared::count(&shared.received, n as u64),
                Err(e) => return shared.error(e),
            },
        }
    }
}
