//! One connection per server, owned by a task: requests hand it commands
//! through a bounded channel (a clone of the sender each, no lock) and
//! wait for their reply with a deadline. The task pipelines the commands,
//! matches replies to callers in order, and reconnects with backoff when
//! the connection breaks; while it is down, calls fail at once.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until, timeout};

use super::resp::{self, Value};

/// Commands waiting for the task; past that, calls fail (the store is
/// not keeping up).
const QUEUE: usize = 8192;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A reply slower than this means the connection is stuck: reconnect.
const STALL: Duration = Duration::from_secs(2);
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Bytes of queued commands written at once.
const BATCH: usize = 64 * 1024;

/// Why a call got no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// Not connected (down, unreachable, or the connection broke).
    Unavailable,
    /// No reply before the deadline.
    Timeout,
    /// Too many commands queued.
    Busy,
    /// A reply of the wrong shape, or an error reply.
    BadReply,
}

type Reply = oneshot::Sender<Result<Value, StoreError>>;

struct Call {
    command: Vec<u8>,
    reply: Reply,
}

/// A handle on one server's connection; clones share it.
#[derive(Clone, Debug)]
pub struct Client {
    address: std::sync::Arc<str>,
    calls: mpsc::Sender<Call>,
}

impl Client {
    /// Starts the connection task for `address` (`host:port`) on the
    /// current runtime. Outside one, every call fails `Unavailable`.
    pub fn new(address: &str) -> Self {
        let (calls, queue) = mpsc::channel(QUEUE);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(run(address.to_string(), queue));
            }
            Err(_) => tracing::warn!(address, "no runtime for the Redis connection"),
        }
        Client {
            address: address.into(),
            calls,
        }
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `args` as one command now; the future is its reply, if it
    /// comes by `deadline`.
    pub fn call(
        &self,
        args: &[&[u8]],
        deadline: Instant,
    ) -> impl Future<Output = Result<Value, StoreError>> + use<> {
        let mut command = Vec::with_capacity(64);
        resp::encode(&mut command, args);
        let (reply, answer) = oneshot::channel();
        let sent = self
            .calls
            .try_send(Call { command, reply })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => StoreError::Busy,
                mpsc::error::TrySendError::Closed(_) => StoreError::Unavailable,
            });
        async move {
            sent?;
            match tokio::time::timeout_at(deadline, answer).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(StoreError::Unavailable),
                Err(_) => Err(StoreError::Timeout),
            }
        }
    }
}

/// How a connection ended.
enum Ended {
    /// Every handle is gone: the task ends.
    Dropped,
    Broken(String),
}

async fn run(address: String, mut queue: mpsc::Receiver<Call>) {
    let mut backoff = MIN_BACKOFF;
    let mut was_up = true;
    loop {
        match timeout(CONNECT_TIMEOUT, TcpStream::connect(&address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                tracing::info!(%address, "connected to the rate-limit store");
                backoff = MIN_BACKOFF;
                was_up = true;
                match serve(stream, &mut queue).await {
                    Ended::Dropped => return,
                    Ended::Broken(why) => {
                        tracing::warn!(%address, %why, "rate-limit store connection lost");
                    }
                }
            }
            Ok(Err(e)) if was_up => {
                tracing::warn!(%address, error = %e, "rate-limit store unreachable");
                was_up = false;
            }
            Err(_) if was_up => {
                tracing::warn!(%address, "rate-limit store connect timed out");
                was_up = false;
            }
            _ => {}
        }
        // Until the next attempt, calls fail at once rather than wait.
        let retry = Instant::now() + backoff;
        loop {
            tokio::select! {
                _ = sleep_until(retry) => break,
                call = queue.recv() => match call {
                    Some(call) => {
                        let _ = call.reply.send(Err(StoreError::Unavailable));
                    }
                    None => return,
                },
            }
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn serve(stream: TcpStream, queue: &mut mpsc::Receiver<Call>) -> Ended {
    let (mut reader, mut writer) = stream.into_split();
    let mut pending: VecDeque<(Instant, Reply)> = VecDeque::new();
    let mut replies = BytesMut::with_capacity(4096);
    let mut out = Vec::with_capacity(4096);
    let ended = loop {
        let stalled = pending.front().map(|(sent, _)| *sent + STALL);
        tokio::select! {
            call = queue.recv() => {
                let Some(call) = call else { break Ended::Dropped };
                out.clear();
                let now = Instant::now();
                let mut next = Some(call);
                while let Some(call) = next.take() {
                    out.extend_from_slice(&call.command);
                    pending.push_back((now, call.reply));
                    if out.len() < BATCH {
                        next = queue.try_recv().ok();
                    }
                }
                if let Err(e) = writer.write_all(&out).await {
                    break Ended::Broken(e.to_string());
                }
            }
            read = read_some(&mut reader, &mut replies) => {
                if let Err(why) = read.and_then(|()| deliver(&mut replies, &mut pending)) {
                    break Ended::Broken(why);
                }
            }
            _ = sleep_until(stalled.unwrap_or_else(Instant::now)), if stalled.is_some() => {
                break Ended::Broken("no reply in time".into());
            }
        }
    };
    for (_, reply) in pending {
        let _ = reply.send(Err(StoreError::Unavailable));
    }
    ended
}

async fn read_some(reader: &mut OwnedReadHalf, buf: &mut BytesMut) -> Result<(), String> {
    match reader.read_buf(buf).await {
        Ok(0) => Err("closed by the server".into()),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Hands every complete reply in `buf` to the oldest waiting caller.
fn deliver(buf: &mut BytesMut, pending: &mut VecDeque<(Instant, Reply)>) -> Result<(), String> {
    while let Some(value) = resp::decode(buf).map_err(|e| e.0.to_string())? {
        let Some((_, reply)) = pending.pop_front() else {
            return Err("a reply nobody asked for".into());
        };
        // The caller may have given up (deadline); the order still holds.
        let _ = reply.send(Ok(value));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A fake server answering each command (one line read) with `reply`.
    async fn fake(reply: &'static [u8]) -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let commands = buf[..n].iter().filter(|b| **b == b'*').count();
                for _ in 0..commands {
                    s.write_all(reply).await.unwrap();
                }
            }
        });
        (address, task)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn replies_come_back_to_their_callers() {
        let (address, _server) = fake(b":42\r\n").await;
        let client = Client::new(&address);
        let (a, b) = tokio::join!(client.call(&[b"X"], soon()), client.call(&[b"Y"], soon()));
        assert_eq!(a, Ok(Value::Int(42)));
        assert_eq!(b, Ok(Value::Int(42)));
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let client = Client::new(&address);
        let deadline = Instant::now() + Duration::from_millis(50);
        assert_eq!(
            client.call(&[b"PING"], deadline).await,
            Err(StoreError::Timeout)
        );
        drop(listener);
    }

    #[tokio::test]
    async fn nobody_listening_is_unavailable() {
        let address = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let client = Client::new(&address);
        assert_eq!(
            client.call(&[b"PING"], soon()).await,
            Err(StoreError::Unavailable)
        );
    }
}
