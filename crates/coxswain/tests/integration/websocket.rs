//! HTTP/1.1 Upgrade (WebSocket) end to end in standalone mode: a minimal
//! RFC 6455 client written here, over std sockets, through the gateway to
//! the Gateway API conformance echo server (echo-basic, built and cached by
//! tools/fakelet/build-echo-basic.sh), whose `/ws` echoes every frame's
//! payload back (golang.org/x/net/websocket, `io.Copy`). The backend
//! Service port says `appProtocol: kubernetes.io/ws`; a second listener
//! routes to a port that says `kubernetes.io/h2c`, which cannot upgrade.

use crate::support;

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use support::*;

/// A child process killed when the test ends.
struct Running(Child);

impl Running {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The echo-basic binary, built (or found cached) once per test binary.
fn echo_basic() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(
        || match build_tool("fakelet/build-echo-basic.sh").as_slice() {
            [binary] => binary.clone(),
            paths => panic!("tools/fakelet/build-echo-basic.sh printed {paths:?}"),
        },
    )
}

fn config_yaml(ws_port: u16, h2c_port: u16, echo_port: u16, h2c_backend: u16) -> String {
    let documents = [
        format!(
            "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: ws
spec:
  gatewayClassName: coxswain
  listeners:
  - name: ws
    protocol: HTTP
    port: {ws_port}
  - name: h2c
    protocol: HTTP
    port: {h2c_port}
"
        ),
        loopback_service("echo", echo_port, &["appProtocol: kubernetes.io/ws"]),
        loopback_service("h2c", h2c_backend, &["appProtocol: kubernetes.io/h2c"]),
        format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: echo
spec:
  parentRefs:
  - name: ws
    sectionName: ws
  rules:
  - filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set:
        - name: x-via-gateway
          value: \"yes\"
    backendRefs:
    - name: echo
      port: {echo_port}
"
        ),
        format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: h2c
spec:
  parentRefs:
  - name: ws
    sectionName: h2c
  rules:
  - backendRefs:
    - name: h2c
      port: {h2c_backend}
"
        ),
    ];
    documents.join("---\n")
}

struct Setup {
    gateway: Gateway,
    /// HTTP listener routed to echo-basic (`kubernetes.io/ws`).
    ws_port: u16,
    /// HTTP listener routed to the `kubernetes.io/h2c` port.
    h2c_port: u16,
    echo: Running,
    /// The `kubernetes.io/h2c` endpoint: a listener that nothing may reach
    /// (non-blocking, so a test can check that no connection arrived).
    h2c_backend: TcpListener,
    /// The config as written (`websocket.yaml`), for edits.
    yaml: String,
}

impl Setup {
    fn routes(&self) -> String {
        format!(
            "HTTPRoute echo: {:?}\nHTTPRoute h2c: {:?}\ngateway log:\n{}",
            self.gateway.status_of("HTTPRoute", "echo"),
            self.gateway.status_of("HTTPRoute", "h2c"),
            self.gateway.stderr()
        )
    }

    /// The current value of an unlabelled metric on the admin listener.
    fn metric(&self, name: &str) -> Option<u64> {
        self.gateway.metric(name)
    }

    /// Waits (with the deadline) for a metric to read `value`.
    fn wait_metric(&self, name: &str, value: u64) {
        let mut last = None;
        wait_for(&format!("{name} to be {value}"), || {
            last = self.metric(name);
            last == Some(value)
        });
    }
}

/// echo-basic behind a Gateway with a `ws` listener (route with a
/// RequestHeaderModifier to echo-basic) and an `h2c` listener (route to an
/// h2c port).
fn setup(tag: &str) -> Setup {
    setup_with(tag, &[])
}

/// [`setup`] with extra `coxswain run` flags.
fn setup_with(tag: &str, args: &[&str]) -> Setup {
    let echo_port = free_port();
    let echo = Running(
        Command::new(echo_basic())
            .env("HTTP_PORT", echo_port.to_string())
            // echo-basic also serves h2c (default 3001): keep it off shared ports.
            .env("H2C_PORT", free_port().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let h2c_backend = TcpListener::bind("127.0.0.1:0").unwrap();
    h2c_backend.set_nonblocking(true).unwrap();
    let h2c_backend_port = h2c_backend.local_addr().unwrap().port();
    let (ws_port, h2c_port) = (free_port(), free_port());
    let config = TempDir::new(tag);
    let yaml = config_yaml(ws_port, h2c_port, echo_port, h2c_backend_port);
    config.write("websocket.yaml", &yaml);
    wait_for("echo-basic", || {
        TcpStream::connect(("127.0.0.1", echo_port)).is_ok()
    });
    let gateway = Gateway::start_with(config, ws_port, free_port(), args);
    for port in [ws_port, h2c_port] {
        wait_for("the gateway's listeners", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }
    Setup {
        gateway,
        ws_port,
        h2c_port,
        echo,
        h2c_backend,
        yaml,
    }
}

// ---- a minimal RFC 6455 client ----

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// Pseudo-random bytes (xorshift), for keys, masks and payloads.
fn random_bytes(n: usize) -> Vec<u8> {
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let mut x = STATE.fetch_add(0x6A09_E667_F3BC_C909, Ordering::Relaxed) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A fresh Sec-WebSocket-Key: 16 random bytes, base64.
fn new_key() -> String {
    base64(&random_bytes(16))
}

/// Sec-WebSocket-Accept for `key`: base64(SHA-1(key + GUID)), SHA-1 by
/// openssl (no SHA-1 crate in the lock file); cached per key.
fn expected_accept(key: &str) -> String {
    static CACHE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(accept) = cache.lock().unwrap().get(key) {
        return accept.clone();
    }
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha1", "-binary"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{key}{GUID}").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.len() == 20,
        "openssl dgst -sha1: {out:?}"
    );
    let accept = base64(&out.stdout);
    cache
        .lock()
        .unwrap()
        .insert(key.to_string(), accept.clone());
    accept
}

/// A response head: status and headers (names lowercased).
#[derive(Debug)]
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the comma-separated header lists `token` (case-insensitive).
    fn lists(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

#[derive(Debug)]
struct Frame {
    fin: bool,
    opcode: u8,
    payload: Vec<u8>,
}

/// One client frame, masked with a random key.
fn encode_frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let mask = random_bytes(4);
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// A client connection: HTTP until upgraded, then frames. Reads are
/// buffered here so nothing read past the head is lost.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Frame bytes sent and received since the upgrade.
    sent: u64,
    received: u64,
}

impl Conn {
    fn connect(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        stream.set_write_timeout(Some(DEADLINE)).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: Vec::new(),
            sent: 0,
            received: 0,
        }
    }

    /// Reads more into the buffer; Ok(false) at EOF.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if !self.fill()? {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!("EOF with {} of {n} bytes", self.buf.len()),
                ));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    fn read_head(&mut self) -> io::Result<Head> {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            if !self.fill()? {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    format!(
                        "EOF before the end of a response head: {:?}",
                        String::from_utf8_lossy(&self.buf)
                    ),
                ));
            }
        };
        let raw = self.take(end + 4)?;
        let text = String::from_utf8_lossy(&raw[..end]).into_owned();
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let (version, status) = (parts.next(), parts.next().and_then(|s| s.parse().ok()));
        let (Some("HTTP/1.1"), Some(status)) = (version, status) else {
            return Err(io::Error::new(
                ErrorKind::InvalidData,
                format!("bad status line: {status_line:?}"),
            ));
        };
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Ok(Head { status, headers })
    }

    /// A response body framed by Content-Length or chunked encoding.
    fn read_body(&mut self, head: &Head) -> io::Result<Vec<u8>> {
        if head.lists("transfer-encoding", "chunked") {
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        break i;
                    }
                    if !self.fill()? {
                        return Err(ErrorKind::UnexpectedEof.into());
                    }
                };
                let line = self.take(line_end + 2)?;
                let size = String::from_utf8_lossy(&line[..line_end]);
                let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16)
                    .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                if size == 0 {
                    self.take(2)?;
                    return Ok(body);
                }
                body.extend(self.take(size)?);
                self.take(2)?;
            }
        }
        let len = head
            .get("content-length")
            .map_or(0, |v| v.parse().unwrap_or(0));
        self.take(len)
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    fn send_frame(&mut self, opcode: u8, fin: bool, payload: &[u8]) {
        let frame = encode_frame(opcode, fin, payload);
        self.send(&frame);
        self.sent += frame.len() as u64;
    }

    fn read_frame(&mut self) -> io::Result<Frame> {
        let h = self.take(2)?;
        assert_eq!(h[0] & 0x70, 0, "RSV bits set in a server frame");
        assert_eq!(h[1] & 0x80, 0, "a server frame is masked");
        let (len, extra) = match h[1] & 0x7f {
            126 => {
                let b = self.take(2)?;
                (u64::from(u16::from_be_bytes([b[0], b[1]])), 2)
            }
            127 => {
                let b = self.take(8)?;
                (u64::from_be_bytes(b.try_into().unwrap()), 8)
            }
            n => (u64::from(n), 0),
        };
        let payload = self.take(usize::try_from(len).unwrap())?;
        self.received += 2 + extra + len;
        Ok(Frame {
            fin: h[0] & 0x80 != 0,
            opcode: h[0] & 0x0f,
            payload,
        })
    }

    /// Data frames until `len` payload bytes came: echo-basic echoes what
    /// it read as it read it (`io.Copy` with a 32 KiB buffer), so a long
    /// message may come back as several frames.
    fn read_payload(&mut self, len: usize) -> io::Result<(Vec<u8>, Vec<u8>)> {
        let mut payload = Vec::new();
        let mut opcodes = Vec::new();
        while payload.len() < len {
            let frame = self.read_frame()?;
            assert!(frame.fin, "echo-basic sends unfragmented frames: {frame:?}");
            opcodes.push(frame.opcode);
            payload.extend(frame.payload);
        }
        Ok((opcodes, payload))
    }

    /// Reads to EOF (within the read timeout), returning the frames that
    /// came before it. A timeout or a reset is an error.
    fn frames_until_eof(&mut self) -> io::Result<Vec<Frame>> {
        let mut frames = Vec::new();
        loop {
            if self.buf.is_empty() && !self.fill()? {
                return Ok(frames);
            }
            frames.push(self.read_frame()?);
        }
    }
}

/// The upgrade request for `path` with `key`.
fn upgrade_request(path: &str, key: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://ws.test\r\n\r\n"
    )
}

/// Opens a WebSocket to `/ws` through the gateway on `port` and checks the
/// handshake: 101, `Upgrade: websocket`, `Connection: upgrade`, and the
/// accept value for the key.
fn open_ws(port: u16, key: &str) -> Result<Conn, String> {
    let mut conn = Conn::connect(port);
    conn.send(upgrade_request("/ws", key).as_bytes());
    let head = conn.read_head().map_err(|e| format!("handshake: {e}"))?;
    let check = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("{what}: {head:?}"))
        }
    };
    check(head.status == 101, "not 101")?;
    check(
        head.get("upgrade")
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket")),
        "no Upgrade: websocket",
    )?;
    check(
        head.lists("connection", "upgrade"),
        "no Connection: upgrade",
    )?;
    check(
        head.get("sec-websocket-accept") == Some(expected_accept(key).as_str()),
        "wrong Sec-WebSocket-Accept",
    )?;
    check(conn.buf.is_empty(), "bytes after the 101 head")?;
    Ok(conn)
}

/// Sends a close frame (1000) and expects the connection to end: echo-basic
/// stops at the close frame and closes its socket without echoing one, so
/// an echoed close frame is allowed but not required; data frames are not.
fn close(conn: &mut Conn) {
    conn.send_frame(CLOSE, true, &1000u16.to_be_bytes());
    let frames = conn
        .frames_until_eof()
        .unwrap_or_else(|e| panic!("no EOF after a close frame: {e}"));
    assert!(
        frames.iter().all(|f| f.opcode == CLOSE),
        "frames after close: {frames:?}"
    );
}

/// The soft RLIMIT_NOFILE of this process (inherited by the gateway and
/// echo-basic).
fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|l| l.split_whitespace().next())
        .map_or(1024, |v| v.parse().unwrap_or(u64::MAX))
}

// ---- cases ----

/// The client's own check: the worked example of RFC 6455 section 1.3.
#[test]
fn accept_value_matches_the_rfc_example() {
    assert_eq!(
        expected_accept("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
}

/// Text, binary, a ping, and a 200 KiB binary message, echoed back with
/// their payloads intact; the byte counters match what crossed the wire.
#[test]
fn frames_are_echoed_exactly() {
    let s = setup("frames");
    let mut ws = open_ws(s.ws_port, &new_key()).unwrap_or_else(|e| panic!("{e}\n{}", s.routes()));

    let text = "hello, websocket \u{2713}";
    ws.send_frame(TEXT, true, text.as_bytes());
    let frame = ws.read_frame().unwrap();
    assert_eq!((frame.fin, frame.opcode), (true, TEXT));
    assert_eq!(frame.payload, text.as_bytes());

    // Every byte value, including invalid UTF-8. echo-basic's io.Copy
    // writes every frame with its connection's default type (text), so
    // only the payload is checked, not the opcode.
    let binary: Vec<u8> = (0..=255u8).rev().chain(0..=255).collect();
    ws.send_frame(BINARY, true, &binary);
    let (_, echoed) = ws.read_payload(binary.len()).unwrap();
    assert_eq!(echoed, binary);

    // Control frames cross too: echo-basic answers a ping with a pong.
    ws.send_frame(PING, true, b"are you there");
    let pong = ws.read_frame().unwrap();
    assert_eq!(
        (pong.opcode, pong.payload.as_slice()),
        (PONG, &b"are you there"[..])
    );

    // A message fragmented by the client: two frames, one message.
    ws.send_frame(TEXT, false, b"frag");
    ws.send_frame(0x0, true, b"mented");
    let (_, echoed) = ws.read_payload(10).unwrap();
    assert_eq!(echoed, b"fragmented");

    // 200 KiB in one frame, written while the echo is read: neither side
    // waits for the whole message.
    let big = random_bytes(200 * 1024);
    let frame = encode_frame(BINARY, true, &big);
    let frame_len = frame.len() as u64;
    let mut writer = ws.stream.try_clone().unwrap();
    let sending = std::thread::spawn(move || writer.write_all(&frame));
    let (opcodes, echoed) = ws.read_payload(big.len()).unwrap();
    sending.join().unwrap().unwrap();
    ws.sent += frame_len;
    assert!(echoed == big, "the 200 KiB message came back different");
    assert!(
        opcodes.iter().all(|&o| o == TEXT || o == BINARY),
        "{opcodes:?}"
    );

    s.wait_metric("coxswain_proxy_upgrades_total", 1);
    s.wait_metric("coxswain_proxy_upgrades_active", 1);
    close(&mut ws);
    let (sent, received) = (ws.sent, ws.received);
    drop(ws);
    s.wait_metric("coxswain_proxy_upgrades_active", 0);
    s.wait_metric("coxswain_proxy_upgrade_received_bytes_total", sent);
    s.wait_metric("coxswain_proxy_upgrade_sent_bytes_total", received);
}

/// The access log's records so far, each parsed as JSON.
fn log_records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// With the access log on, a WebSocket's record is written when its tunnel
/// closes, not at the 101: it carries the frame bytes each way (as the
/// upgrade byte metrics count them) and the tunnel's whole life.
#[test]
fn the_access_log_records_a_websocket_when_it_closes() {
    let logs = TempDir::new("wslog-out");
    let log = logs.path().join("access.log");
    let s = setup_with("wslog", &["--access-log", log.to_str().unwrap()]);
    let mut ws = open_ws(s.ws_port, &new_key()).unwrap_or_else(|e| panic!("{e}\n{}", s.routes()));
    ws.send_frame(TEXT, true, b"logged when closed");
    let opened = Instant::now();
    assert_eq!(ws.read_frame().unwrap().payload, b"logged when closed");

    // A plain request meanwhile is logged at once. The writer keeps the
    // order records are handed to it, so once this one is in the file a
    // WebSocket record handed over at the 101 would be there too.
    let mut plain = Conn::connect(s.ws_port);
    plain.send(b"GET /plain HTTP/1.1\r\nHost: ws.test\r\n\r\n");
    let head = plain.read_head().unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    plain.read_body(&head).unwrap();
    wait_for("the plain request's record", || {
        log_records(&log).iter().any(|r| r["path"] == "/plain")
    });
    let early = log_records(&log);
    assert!(early.iter().all(|r| r["path"] != "/ws"), "{early:#?}");

    // The tunnel was open at least from the handshake's end to now.
    let open_for = opened.elapsed();
    close(&mut ws);
    let (sent, received) = (ws.sent, ws.received);
    drop(ws);
    wait_for("the WebSocket's record", || {
        log_records(&log).iter().any(|r| r["path"] == "/ws")
    });
    let all = log_records(&log);
    let records: Vec<_> = all.iter().filter(|r| r["path"] == "/ws").collect();
    assert_eq!(records.len(), 1, "{all:#?}");
    let record = records[0];
    assert_eq!(record["status"], 101, "{record}");
    assert_eq!(record["route_name"], "echo", "{record}");
    assert_eq!(record["bytes_received"], sent, "{record}");
    assert_eq!(record["bytes_sent"], received, "{record}");
    let duration_ms = record["duration_ms"].as_f64().unwrap();
    assert!(
        duration_ms >= open_for.as_secs_f64() * 1000.0 - 0.001,
        "{record} {open_for:?}"
    );
}

/// The route's RequestHeaderModifier applies to upgrade requests as to any
/// other: seen by echo-basic's JSON echo both for a plain GET and for an
/// upgrade request to a path it does not upgrade (it answers 200, so the
/// gateway relays a normal response and the connection stays HTTP), and a
/// WebSocket on the same route works.
#[test]
fn route_filters_apply_to_upgrade_requests() {
    let s = setup("filters");

    let mut conn = Conn::connect(s.ws_port);
    conn.send(b"GET /plain HTTP/1.1\r\nHost: ws.test\r\n\r\n");
    let head = conn.read_head().unwrap();
    let body = conn.read_body(&head).unwrap();
    assert_eq!(head.status, 200, "{head:?}\n{}", s.routes());
    let echo = echo_json(&String::from_utf8_lossy(&body));
    assert_eq!(echo["path"], "/plain");
    assert_eq!(echo["headers"]["X-Via-Gateway"][0], "yes", "{echo}");
    assert!(echo["headers"]["Upgrade"].is_null(), "{echo}");

    // Same connection: an upgrade request to the JSON echo.
    let key = new_key();
    conn.send(upgrade_request("/upgrade-echo", &key).as_bytes());
    let head = conn.read_head().unwrap();
    let body = conn.read_body(&head).unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    assert!(head.get("upgrade").is_none(), "{head:?}");
    let echo = echo_json(&String::from_utf8_lossy(&body));
    let headers = &echo["headers"];
    assert_eq!(echo["path"], "/upgrade-echo");
    assert_eq!(headers["X-Via-Gateway"][0], "yes", "{echo}");
    assert_eq!(headers["Upgrade"][0], "websocket", "{echo}");
    assert!(
        headers["Connection"][0]
            .as_str()
            .is_some_and(|v| v.eq_ignore_ascii_case("upgrade")),
        "{echo}"
    );
    assert_eq!(headers["Sec-Websocket-Key"][0], key.as_str(), "{echo}");
    assert_eq!(headers["Sec-Websocket-Version"][0], "13", "{echo}");
    assert_eq!(headers["Origin"][0], "http://ws.test", "{echo}");

    // Not upgraded: the connection still carries HTTP requests.
    conn.send(b"GET /again HTTP/1.1\r\nHost: ws.test\r\n\r\n");
    let head = conn.read_head().unwrap();
    let body = conn.read_body(&head).unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(echo_json(&String::from_utf8_lossy(&body))["path"], "/again");
    assert_eq!(s.metric("coxswain_proxy_upgrades_total"), Some(0));

    let mut ws = open_ws(s.ws_port, &new_key()).unwrap();
    ws.send_frame(TEXT, true, b"through the filtered route");
    let frame = ws.read_frame().unwrap();
    assert_eq!(frame.payload, b"through the filtered route");
    close(&mut ws);
}

/// A client's close frame ends the connection; so does the backend going
/// away, which the client sees as EOF, and the tunnels are counted closed.
#[test]
fn close_from_either_side_ends_the_connection() {
    let mut s = setup("close");

    let mut ws = open_ws(s.ws_port, &new_key()).unwrap_or_else(|e| panic!("{e}\n{}", s.routes()));
    ws.send_frame(TEXT, true, b"before close");
    assert_eq!(ws.read_frame().unwrap().payload, b"before close");
    close(&mut ws);
    drop(ws);
    s.wait_metric("coxswain_proxy_upgrades_active", 0);

    let mut ws = open_ws(s.ws_port, &new_key()).unwrap();
    ws.send_frame(TEXT, true, b"still here");
    assert_eq!(ws.read_frame().unwrap().payload, b"still here");
    s.wait_metric("coxswain_proxy_upgrades_active", 1);
    s.echo.kill();
    // The read timeout is the deadline: EOF must come before it.
    let frames = ws
        .frames_until_eof()
        .unwrap_or_else(|e| panic!("no EOF after the backend exited: {e}"));
    assert!(frames.is_empty(), "frames from a dead backend: {frames:?}");
    drop(ws);
    s.wait_metric("coxswain_proxy_upgrades_active", 0);
    assert_eq!(s.metric("coxswain_proxy_upgrades_total"), Some(2));
}

/// Many upgraded connections open at once (1,000 when the open-files limit
/// allows): all open, then one message on each, then all closed; the
/// active gauge follows.
#[test]
fn a_thousand_concurrent_websockets() {
    let s = setup("many");
    // Each connection holds a descriptor here, two in the gateway and one
    // in echo-basic; the processes inherit this limit.
    let limit = open_files_limit();
    let count: usize = if limit >= 4500 {
        1000
    } else {
        usize::try_from(limit.saturating_sub(500) / 3).unwrap_or(0)
    };
    println!("open-files limit {limit}: {count} concurrent WebSockets");
    assert!(count >= 100, "open-files limit {limit} is too low");

    const THREADS: usize = 8;
    let opened: Vec<Result<Conn, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let n = count / THREADS + usize::from(t < count % THREADS);
                scope.spawn(move || {
                    (0..n)
                        .map(|_| open_ws(s.ws_port, &new_key()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let failed: Vec<&String> = opened.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {count} handshakes failed, first: {}\n{}",
        failed.len(),
        failed[0],
        s.routes()
    );
    let mut conns: Vec<Conn> = opened.into_iter().map(Result::unwrap).collect();
    s.wait_metric("coxswain_proxy_upgrades_active", count as u64);

    for (i, ws) in conns.iter_mut().enumerate() {
        ws.send_frame(TEXT, true, format!("message {i}").as_bytes());
    }
    for (i, ws) in conns.iter_mut().enumerate() {
        let frame = ws
            .read_frame()
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
        assert_eq!(
            frame.payload,
            format!("message {i}").as_bytes(),
            "connection {i}"
        );
    }

    for ws in &mut conns {
        ws.send_frame(CLOSE, true, &1000u16.to_be_bytes());
    }
    for (i, ws) in conns.iter_mut().enumerate() {
        let frames = ws
            .frames_until_eof()
            .unwrap_or_else(|e| panic!("connection {i}: no EOF after close: {e}"));
        assert!(frames.iter().all(|f| f.opcode == CLOSE), "{frames:?}");
    }
    drop(conns);
    s.wait_metric("coxswain_proxy_upgrades_active", 0);
    assert_eq!(
        s.metric("coxswain_proxy_upgrades_total"),
        Some(count as u64)
    );
}

/// An upgrade to a backend the gateway speaks h2c to cannot be relayed:
/// 502 from the gateway, no 101, the connection stays HTTP, and the
/// backend is never connected to.
#[test]
fn upgrade_to_an_h2c_backend_is_a_502() {
    let s = setup("h2c");
    let mut conn = Conn::connect(s.h2c_port);
    for _ in 0..2 {
        conn.send(upgrade_request("/ws", &new_key()).as_bytes());
        let head = conn.read_head().unwrap();
        let body = conn.read_body(&head).unwrap();
        assert_eq!(
            head.status,
            502,
            "{head:?} {}\n{}",
            String::from_utf8_lossy(&body),
            s.routes()
        );
        assert!(head.get("upgrade").is_none(), "{head:?}");
        assert!(!head.lists("connection", "upgrade"), "{head:?}");
        assert!(head.get("sec-websocket-accept").is_none(), "{head:?}");
    }
    match s.h2c_backend.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the h2c backend was connected to: {other:?}"),
    }
    assert_eq!(s.metric("coxswain_proxy_upgrades_total"), Some(0));
}

/// How long a connection must go unanswered to count as held in the
/// kernel's backlog. A read bounded by it must time out: the bound is
/// the assertion, nothing waits on it to synchronise.
const HELD: Duration = Duration::from_secs(1);

/// Expects not one byte on `conn` for [`HELD`]: the gateway has not served
/// the request sent on it.
fn assert_unanswered(conn: &mut Conn, why: &str) {
    conn.stream.set_read_timeout(Some(HELD)).unwrap();
    match conn.fill() {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("{why}: {other:?} {:?}", String::from_utf8_lossy(&conn.buf)),
    }
    conn.stream.set_read_timeout(Some(DEADLINE)).unwrap();
}

/// With room for one connection (`flag` 1), an open WebSocket keeps its
/// place: a plain request on the same listener waits in the kernel's
/// backlog while the WebSocket relays, and is served once it closes.
fn a_websocket_keeps_its_connection_permit(flag: &str) {
    let s = setup_with("permit", &[flag, "1"]);
    let mut ws = open_ws(s.ws_port, &new_key()).unwrap_or_else(|e| panic!("{e}\n{}", s.routes()));
    ws.send_frame(TEXT, true, b"holding the permit");
    assert_eq!(ws.read_frame().unwrap().payload, b"holding the permit");
    s.wait_metric("coxswain_proxy_upgrades_active", 1);

    let mut plain = Conn::connect(s.ws_port);
    plain.send(b"GET /plain HTTP/1.1\r\nHost: ws.test\r\nConnection: close\r\n\r\n");
    assert_unanswered(
        &mut plain,
        &format!("served beyond {flag} 1 while a WebSocket was open"),
    );

    // The WebSocket relays on meanwhile.
    ws.send_frame(TEXT, true, b"still relayed");
    assert_eq!(ws.read_frame().unwrap().payload, b"still relayed");
    close(&mut ws);
    drop(ws);

    let head = plain
        .read_head()
        .unwrap_or_else(|e| panic!("not served after the WebSocket closed: {e}\n{}", s.routes()));
    let body = plain.read_body(&head).unwrap();
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(echo_json(&String::from_utf8_lossy(&body))["path"], "/plain");
    s.wait_metric("coxswain_proxy_upgrades_active", 0);
}

#[test]
fn a_websocket_counts_under_max_connections() {
    a_websocket_keeps_its_connection_permit("--max-connections");
}

#[test]
fn a_websocket_counts_under_max_connections_per_listener() {
    a_websocket_keeps_its_connection_permit("--max-connections-per-listener");
}

/// A WebSocket drains with its listener: when the listener leaves the
/// config, the tunnel is closed at `--drain-timeout` (not left open until
/// its idle timeout, an hour by default), and not before.
#[test]
fn removing_the_listener_closes_its_websockets_at_the_drain_timeout() {
    const DRAIN: Duration = Duration::from_secs(1);
    let s = setup_with("drain", &["--drain-timeout", "1s"]);
    let mut ws = open_ws(s.ws_port, &new_key()).unwrap_or_else(|e| panic!("{e}\n{}", s.routes()));
    ws.send_frame(TEXT, true, b"before the listener goes");
    assert_eq!(
        ws.read_frame().unwrap().payload,
        b"before the listener goes"
    );
    s.wait_metric("coxswain_proxy_upgrades_active", 1);

    let listener = format!(
        "  - name: ws\n    protocol: HTTP\n    port: {}\n",
        s.ws_port
    );
    assert!(s.yaml.contains(&listener), "{}", s.yaml);
    let removed = Instant::now();
    s.gateway
        .config
        .write_atomic("websocket.yaml", &s.yaml.replace(&listener, ""));
    wait_for("the ws listener to close", || {
        TcpStream::connect(("127.0.0.1", s.ws_port)).is_err()
    });
    // The read timeout (the deadline) bounds the wait for EOF.
    let frames = ws.frames_until_eof().unwrap_or_else(|e| {
        panic!(
            "the WebSocket outlived its listener's drain: {e}\n{}",
            s.gateway.stderr()
        )
    });
    let closed_after = removed.elapsed();
    assert!(frames.is_empty(), "frames at the drain: {frames:?}");
    assert!(
        closed_after >= DRAIN,
        "closed {closed_after:?} after the listener was removed, before the drain timeout"
    );
    assert_eq!(s.metric("coxswain_proxy_upgrades_total"), Some(1));
}

/// A backend that answers every request with a 101 it should not send:
/// without an `Upgrade` header when the request asked to upgrade, and
/// naming `websocket` when it did not ask. After the 101 it writes bytes
/// (a WebSocket frame) that must never reach a client, then holds the
/// connection until the gateway closes it. Returns its port and how many
/// 101s it was about to send.
fn bad_101_backend() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answered = Arc::new(AtomicU64::new(0));
    let count = answered.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let count = count.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut chunk = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&chunk[..n]),
                    }
                }
                let asked = String::from_utf8_lossy(&head)
                    .lines()
                    .any(|l| l.to_ascii_lowercase().starts_with("upgrade:"));
                let response: &[u8] = if asked {
                    b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n"
                } else {
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                      Connection: upgrade\r\n\r\n"
                };
                count.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(response);
                let _ = stream.write_all(b"\x81\x08tunnel?!");
                let _ = io::copy(&mut stream, &mut io::sink());
            });
        }
    });
    (port, answered)
}

/// A Gateway whose one listener routes everything to `backend_port`.
fn bad_101_config(port: u16, backend_port: u16) -> String {
    let documents = [
        format!(
            "{GATEWAY_CLASS}apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: raw
spec:
  gatewayClassName: coxswain
  listeners:
  - name: raw
    protocol: HTTP
    port: {port}
"
        ),
        loopback_service("raw", backend_port, &["appProtocol: kubernetes.io/ws"]),
        format!(
            "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: raw
spec:
  parentRefs:
  - name: raw
  rules:
  - backendRefs:
    - name: raw
      port: {backend_port}
"
        ),
    ];
    documents.join("---\n")
}

/// A backend's 101 is relayed only when it names the protocol (RFC 9110
/// 15.2.2) and answers an upgrade the client asked for. Otherwise: 502,
/// nothing tunnelled, the client's connection stays HTTP, and no upgrade
/// is counted.
#[test]
fn a_101_without_upgrade_or_unasked_is_a_502() {
    let (backend_port, answered) = bad_101_backend();
    let port = free_port();
    let config = TempDir::new("bad-101");
    config.write("bad-101.yaml", &bad_101_config(port, backend_port));
    let gateway = Gateway::start(config, port, free_port());
    wait_for("the gateway's listener", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });

    let mut conn = Conn::connect(port);
    let requests = [
        ("a 101 without Upgrade", upgrade_request("/ws", &new_key())),
        ("a 101 without Upgrade", upgrade_request("/ws", &new_key())),
        (
            "a 101 to a request that did not ask to upgrade",
            "GET /plain HTTP/1.1\r\nHost: ws.test\r\n\r\n".to_string(),
        ),
    ];
    for (n, (what, request)) in requests.iter().enumerate() {
        conn.send(request.as_bytes());
        let head = conn.read_head().unwrap_or_else(|e| {
            panic!(
                "{what}: {e}\nHTTPRoute raw: {:?}\n{}",
                gateway.status_of("HTTPRoute", "raw"),
                gateway.stderr()
            )
        });
        let body = conn.read_body(&head).unwrap();
        assert_eq!(
            head.status,
            502,
            "{what}: {head:?} {}",
            String::from_utf8_lossy(&body)
        );
        assert!(head.get("upgrade").is_none(), "{what}: {head:?}");
        assert!(!head.lists("connection", "upgrade"), "{what}: {head:?}");
        assert_eq!(
            answered.load(Ordering::SeqCst),
            n as u64 + 1,
            "the backend answered {what}"
        );
    }
    assert!(
        conn.buf.is_empty(),
        "bytes past the last response: {:?}",
        String::from_utf8_lossy(&conn.buf)
    );
    assert_eq!(gateway.metric("coxswain_proxy_upgrades_total"), Some(0));
    assert_eq!(gateway.metric("coxswain_proxy_upgrades_active"), Some(0));
}

/// Reads one unmasked server frame with a payload under 126 bytes from an
/// async stream: (opcode, payload).
async fn read_small_frame(
    io: &mut (impl tokio::io::AsyncRead + Unpin),
) -> io::Result<(u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 2];
    io.read_exact(&mut head).await?;
    assert_eq!(head[1] & 0x80, 0, "a server frame is masked");
    let len = usize::from(head[1] & 0x7f);
    assert!(len < 126, "a long frame: {head:?}");
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload).await?;
    Ok((head[0] & 0x0f, payload))
}

/// RFC 8441: a WebSocket over an HTTP/2 stream. The client (hyper's HTTP/2
/// client, over h2c with prior knowledge) sends an extended CONNECT with
/// `:protocol websocket` and no handshake key; the gateway turns it into
/// an HTTP/1.1 upgrade to echo-basic (adding the key), answers the
/// stream 200 once the backend agrees, and relays frames both ways while
/// the same connection goes on serving ordinary requests.
#[test]
fn websocket_over_http2_extended_connect() {
    use http_body_util::{BodyExt, Empty};
    use hyper::client::conn::http2;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::io::AsyncWriteExt;

    let s = setup("h2-connect");
    // A worker thread keeps driving the client's connection after
    // block_on returns, while the test waits for the gateway's metrics.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (_sender, _connection) = runtime.block_on(async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", s.ws_port))
            .await
            .unwrap();
        let (mut sender, connection) = http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
        let connection = tokio::spawn(connection);
        let get = |path: &str| {
            http::Request::get(format!("http://ws.test{path}"))
                .body(Empty::<bytes::Bytes>::new())
                .unwrap()
        };
        // One ordinary request first: its answer means the gateway's
        // SETTINGS (with SETTINGS_ENABLE_CONNECT_PROTOCOL) have arrived.
        let plain = sender.send_request(get("/plain")).await.unwrap();
        assert_eq!(plain.status(), 200);
        plain.into_body().collect().await.unwrap();

        let mut connect = get("/ws");
        *connect.method_mut() = http::Method::CONNECT;
        connect
            .extensions_mut()
            .insert(hyper::ext::Protocol::from_static("websocket"));
        let headers = connect.headers_mut();
        headers.insert("sec-websocket-version", "13".parse().unwrap());
        headers.insert("origin", "http://ws.test".parse().unwrap());
        let response = sender.send_request(connect).await.unwrap();
        assert_eq!(response.status(), 200, "{response:?}\n{}", s.routes());
        for header in ["upgrade", "connection", "sec-websocket-accept"] {
            assert!(response.headers().get(header).is_none(), "{response:?}");
        }
        let mut ws = TokioIo::new(hyper::upgrade::on(response).await.unwrap());

        for text in ["over one h2 stream", "and another frame"] {
            ws.write_all(&encode_frame(TEXT, true, text.as_bytes()))
                .await
                .unwrap();
            let (opcode, payload) = read_small_frame(&mut ws)
                .await
                .unwrap_or_else(|e| panic!("{e}\n{}", s.gateway.stderr()));
            assert_eq!((opcode, payload.as_slice()), (TEXT, text.as_bytes()));
        }
        // The connection serves other streams while the tunnel is open.
        let during = sender.send_request(get("/plain")).await.unwrap();
        assert_eq!(during.status(), 200);
        assert_eq!(s.metric("coxswain_proxy_upgrades_active"), Some(1));

        ws.write_all(&encode_frame(CLOSE, true, &1000u16.to_be_bytes()))
            .await
            .unwrap();
        // echo-basic answers a close by closing (with or without a close
        // frame of its own): the stream ends, and with it the tunnel.
        loop {
            match read_small_frame(&mut ws).await {
                Ok((CLOSE, _)) => continue,
                Ok(other) => panic!("a frame after close: {other:?}"),
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
                Err(e) => panic!("{e}"),
            }
        }
        // Our side of the stream ends too (END_STREAM): the tunnel is done.
        ws.shutdown().await.unwrap();
        (sender, connection)
    });
    s.wait_metric("coxswain_proxy_upgrades_active", 0);
    assert_eq!(s.metric("coxswain_proxy_upgrades_total"), Some(1));
}
