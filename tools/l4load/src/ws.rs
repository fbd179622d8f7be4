//! ws: each worker opens a WebSocket (HTTP/1.1 Upgrade, 101 and
//! Sec-WebSocket-Accept checked), then sends one masked binary message at a
//! time and reads its unmasked echo back, until the deadline; then it closes
//! with a close frame. A failed connection or message is counted and the
//! worker opens a new connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ring::rand::{SecureRandom, SystemRandom};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

use crate::cli::WsArgs;
use crate::run::{Shared, micros_since, payload, round, run_workers};
use crate::ws_frame::{OP_BINARY, OP_CLOSE, ReadFrameError, encode_frame, read_frame};
use crate::ws_handshake::{HandshakeError, new_key, read_head, request};

/// What every worker shares besides the counters.
struct Client {
    target: SocketAddr,
    /// Request target and Host of the Upgrade request.
    path: String,
    host: String,
    message: Vec<u8>,
    random: SystemRandom,
    handshakes: AtomicU64,
    handshake_failures: AtomicU64,
}

#[derive(Debug, thiserror::Error)]
enum EchoError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Frame(#[from] ReadFrameError),
    #[error("expected a final binary frame, got opcode {opcode:#x} (fin {fin})")]
    Unexpected { opcode: u8, fin: bool },
    #[error("the server sent a masked frame")]
    Masked,
    #[error("the echo differs from the message")]
    Mismatch,
    #[error("message timed out")]
    TimedOut,
}

pub async fn run(args: WsArgs) -> anyhow::Result<Value> {
    let shared = Shared::new(&args.load);
    let client = Arc::new(Client {
        target: args.load.target,
        path: args.path.clone(),
        host: args.host.clone(),
        message: payload(args.message_bytes as usize),
        random: SystemRandom::new(),
        handshakes: AtomicU64::new(0),
        handshake_failures: AtomicU64::new(0),
    });
    let elapsed = run_workers(&shared, args.load.concurrency, |shared| {
        worker(shared, client.clone())
    })
    .await;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let messages = Shared::get(&shared.ok);
    let (p50, p99) = shared.percentiles_ms();
    Ok(json!({
        "mode": "ws",
        "target": args.load.target.to_string(),
        "path": args.path,
        "host": args.host,
        "concurrency": args.load.concurrency,
        "message_bytes": args.message_bytes,
        "elapsed_s": round(secs, 3),
        "connections": Shared::get(&client.handshakes),
        "handshake_failures": Shared::get(&client.handshake_failures),
        "messages": messages,
        "messages_per_s": round(messages as f64 / secs, 1),
        // Payload bytes of the echoed messages, frame headers not included.
        "sent_bytes": Shared::get(&shared.sent),
        "received_bytes": Shared::get(&shared.received),
        "errors": Shared::get(&shared.errors),
        "p50_ms": round(p50, 3),
        "p99_ms": round(p99, 3),
        "first_error": shared.first_error(),
    }))
}

async fn worker(shared: Arc<Shared>, client: Arc<Client>) {
    let mut latencies = Vec::new();
    while shared.running() {
        let mut conn = match timeout(shared.op_timeout, Conn::open(&client)).await {
            Ok(Ok(conn)) => {
                Shared::count(&client.handshakes, 1);
                conn
            }
            Ok(Err(e)) => {
                Shared::count(&client.handshake_failures, 1);
                shared.note(format!("handshake: {e}"));
                continue;
            }
            Err(_) => {
                Shared::count(&client.handshake_failures, 1);
                shared.note("handshake: timed out");
                continue;
            }
        };
        match conn
            .echo_until_deadline(&shared, &client, &mut latencies)
            .await
        {
            Ok(()) => conn.close(&shared).await,
            Err(e) => shared.error(e),
        }
    }
    shared.add_latencies(&latencies);
}

/// One upgraded connection and its reusable buffers.
struct Conn {
    stream: BufReader<TcpStream>,
    frame: Vec<u8>,
    reply: Vec<u8>,
    /// xorshift64 state for the masking keys (seeded from the system RNG).
    mask_state: u64,
}

impl Conn {
    async fn open(client: &Client) -> Result<Conn, HandshakeError> {
        let tcp = TcpStream::connect(client.target).await?;
        tcp.set_nodelay(true)?;
        let mut stream = BufReader::new(tcp);
        let key = new_key(&client.random)?;
        stream
            .write_all(request(&client.path, &client.host, &key).as_bytes())
            .await?;
        read_head(&mut stream).await?.check_101(&key)?;
        let mut seed = [0u8; 8];
        client
            .random
            .fill(&mut seed)
            .map_err(|_| HandshakeError::Random("system random source failed"))?;
        Ok(Conn {
            stream,
            frame: Vec::new(),
            reply: Vec::new(),
            mask_state: u64::from_le_bytes(seed) | 1,
        })
    }

    fn next_mask(&mut self) -> [u8; 4] {
        let mut x = self.mask_state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.mask_state = x;
        let [a, b, c, d, ..] = x.to_le_bytes();
        [a, b, c, d]
    }

    async fn echo_until_deadline(
        &mut self,
        shared: &Shared,
        client: &Client,
        latencies: &mut Vec<u32>,
    ) -> Result<(), EchoError> {
        let len = client.message.len() as u64;
        while shared.running() {
            let began = Instant::now();
            match timeout(shared.op_timeout, self.exchange(&client.message)).await {
                Ok(Ok(())) => {
                    latencies.push(micros_since(began));
                    Shared::count(&shared.ok, 1);
                    Shared::count(&shared.sent, len);
                    Shared::count(&shared.received, len);
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(EchoError::TimedOut),
            }
        }
        Ok(())
    }

    /// One message out, its echo back.
    async fn exchange(&mut self, message: &[u8]) -> Result<(), EchoError> {
        self.frame.clear();
        let mask = self.next_mask();
        encode_frame(&mut self.frame, OP_BINARY, message, Some(mask));
        self.stream.write_all(&self.frame).await?;
        let header = read_frame(&mut self.stream, &mut self.reply, message.len() as u64).await?;
        if header.opcode != OP_BINARY || !header.fin {
            return Err(EchoError::Unexpected {
                opcode: header.opcode,
                fin: header.fin,
            });
        }
        if header.mask.is_some() {
            return Err(EchoError::Masked);
        }
        if self.reply != message {
            return Err(EchoError::Mismatch);
        }
        Ok(())
    }

    /// Close frame (1000, normal closure), then wait for the server's close
    /// or EOF, bounded; the run is over, so failures here are not counted.
    async fn close(mut self, shared: &Shared) {
        self.frame.clear();
        let mask = self.next_mask();
        encode_frame(
            &mut self.frame,
            OP_CLOSE,
            &1000u16.to_be_bytes(),
            Some(mask),
        );
        if self.stream.write_all(&self.frame).await.is_err() {
            return;
        }
        let _ = timeout(shared.op_timeout, async {
            // Echoes still in flight may come before the close.
            while let Ok(header) = read_frame(&mut self.stream, &mut self.reply, 1 << 24).await {
                if header.opcode == OP_CLOSE {
                    break;
                }
            }
        })
        .await;
    }
}
