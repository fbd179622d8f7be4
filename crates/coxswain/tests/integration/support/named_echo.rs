//! `coxswain echo` as a backend: a child process killed on drop.

use std::process::{Child, Command, Stdio};

use super::{BIN, curl_get, wait_for};

/// A running `coxswain echo`, killed and reaped on drop.
pub struct Echo(pub Child);

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A named `coxswain echo` (it reports its name as `pod`) on 127.0.0.1:`port`,
/// once it answers.
pub fn echo(name: &str, port: u16) -> Echo {
    let child = Command::new(BIN)
        .args(["echo", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--name", name])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    wait_for("echo to listen", || curl_get(&[], &url).0 == 200);
    Echo(child)
}
