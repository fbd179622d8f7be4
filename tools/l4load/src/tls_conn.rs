//! tls-conn: connect, full TLS handshake with SNI, one echoed request,
//! close; repeat. Through a passthrough proxy the handshake is end to end.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use tokio_rustls::TlsConnector;

use crate::cli::TlsConnArgs;
use crate::run::{Shared, exchange, micros_since, payload, run_workers};
use crate::tcp_conn::conn_report;
use crate::tls::client_config;

#[derive(Clone)]
struct Client {
    target: SocketAddr,
    connector: TlsConnector,
    name: ServerName<'static>,
    request: Arc<[u8]>,
}

pub async fn run(args: TlsConnArgs) -> anyhow::Result<Value> {
    let client = Client {
        target: args.conn.load.target,
        connector: TlsConnector::from(Arc::new(client_config(&args.cafile)?)),
        name: ServerName::try_from(args.sni.clone()).context("--sni")?,
        request: payload(args.conn.size as usize).into(),
    };
    let shared = Shared::new(&args.conn.load);
    let elapsed = run_workers(&shared, args.conn.load.concurrency, |shared| {
        worker(shared, client.clone())
    })
    .await;
    Ok(conn_report("tls-conn", &args.conn, &shared, elapsed))
}

async fn worker(shared: Arc<Shared>, client: Client) {
    let mut reply = vec![0u8; client.request.len()];
    let mut latencies = Vec::new();
    while shared.running() {
        let began = Instant::now();
        match timeout(shared.op_timeout, once(&client, &mut reply)).await {
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

async fn once(client: &Client, reply: &mut [u8]) -> io::Result<()> {
    let tcp = TcpStream::connect(client.target).await?;
    tcp.set_nodelay(true)?;
    let mut tls = client.connector.connect(client.name.clone(), tcp).await?;
    exchange(&mut tls, &client.request, reply).await
}
