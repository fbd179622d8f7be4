//! A real `redis-server` on a loopback port, for global RateLimit tests:
//! started without persistence, ready once it answers PING, killed on
//! drop. (Debian: `apt-get install redis-server`.)

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The gap between two PINGs of a deadline-bounded wait: it paces
/// polling, it does not synchronise.
#[allow(clippy::disallowed_methods)]
fn poll_pause() {
    std::thread::sleep(Duration::from_millis(20));
}

pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
}

impl RedisServer {
    pub fn start(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (apt-get install redis-server)");
        let server = RedisServer {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.answers_ping() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            poll_pause();
        }
        server
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn answers_ping(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok()
            && s.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }

    /// Kills the server and waits for it to be gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl RedisServer {
    /// One command's reply, as the lines of its RESP text (a PING after it
    /// marks where the reply ends).
    pub fn command(&self, args: &[&str]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        out.push_str("PING\r\n");
        s.write_all(out.as_bytes()).unwrap();
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        while !reply.ends_with(b"+PONG\r\n") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "redis closed the connection");
            reply.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&reply[..reply.len() - 7]).into_owned();
        text.lines()
            .filter(|l| !l.starts_with('*') && !l.starts_with('$'))
            .map(|l| l.trim_start_matches(':'))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
