//! The WebSocket origin: answers a valid Upgrade request with 101 and the
//! Sec-WebSocket-Accept it calls for (anything else gets 400), then echoes
//! every data frame back unmasked with the same opcode and FIN bit, answers
//! pings with pongs, and a close with a close before ending the connection.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::cli::ServeArgs;
use crate::serve::{accept, bind};
use crate::ws_frame::{
    FrameError, FrameHeader, OP_CLOSE, OP_PING, OP_PONG, ReadFrameError, encode_frame,
    encode_header, read_frame,
};
use crate::ws_handshake::{HandshakeError, read_head, switching_protocols};

/// Longest message payload echoed; a longer one is closed with 1009.
const MAX_PAYLOAD: u64 = 16 * 1024 * 1024 + 1024;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const CLOSE_PROTOCOL_ERROR: u16 = 1002;
const CLOSE_TOO_BIG: u16 = 1009;

#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("handshake: {0}")]
    Handshake(#[from] HandshakeError),
    #[error("handshake timed out")]
    HandshakeTimeout,
    #[error("{0}")]
    Frame(#[from] ReadFrameError),
    #[error("unmasked frame from the client")]
    Unmasked,
}

pub async fn ws_echo(args: ServeArgs) -> anyhow::Result<()> {
    let listener = bind(&args).await?;
    loop {
        let stream = accept(&listener).await;
        tokio::spawn(async move {
            // Errors end one connection; clients going away is normal.
            let _ = serve(stream).await;
        });
    }
}

async fn serve(stream: TcpStream) -> Result<(), ServeError> {
    let mut stream = BufReader::new(stream);
    let head = timeout(HANDSHAKE_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| ServeError::HandshakeTimeout)??;
    let key = match head.upgrade_key() {
        Ok(key) => key.to_owned(),
        Err(e) => {
            stream
                .write_all(
                    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await?;
            stream.shutdown().await?;
            return Err(e.into());
        }
    };
    stream
        .write_all(switching_protocols(&key).as_bytes())
        .await?;
    let mut payload = Vec::new();
    let mut out = Vec::new();
    loop {
        let header = match read_frame(&mut stream, &mut payload, MAX_PAYLOAD).await {
            Ok(header) => header,
            Err(ReadFrameError::Frame(e)) => {
                let code = match e {
                    FrameError::TooLarge { .. } => CLOSE_TOO_BIG,
                    _ => CLOSE_PROTOCOL_ERROR,
                };
                close(&mut stream, &mut out, &code.to_be_bytes()).await?;
                return Err(ReadFrameError::Frame(e).into());
            }
            Err(e) => return Err(e.into()),
        };
        if header.mask.is_none() {
            close(&mut stream, &mut out, &CLOSE_PROTOCOL_ERROR.to_be_bytes()).await?;
            return Err(ServeError::Unmasked);
        }
        out.clear();
        match header.opcode {
            // The close echoed back (its status code with it) ends the connection.
            OP_CLOSE => return Ok(close(&mut stream, &mut out, &payload).await?),
            OP_PING => encode_frame(&mut out, OP_PONG, &payload, None),
            OP_PONG => continue,
            // Data frames go back as they came, fragments included.
            opcode => {
                encode_header(
                    &mut out,
                    &FrameHeader {
                        fin: header.fin,
                        opcode,
                        mask: None,
                        len: header.len,
                    },
                );
                out.extend_from_slice(&payload);
            }
        }
        stream.write_all(&out).await?;
    }
}

/// Sends a close frame with `body` (a status code, maybe a reason) and
/// closes the write side.
async fn close(
    stream: &mut BufReader<TcpStream>,
    out: &mut Vec<u8>,
    body: &[u8],
) -> io::Result<()> {
    out.clear();
    encode_frame(out, OP_CLOSE, body, None);
    stream.write_all(out).await?;
    stream.shutdown().await
}
