//! Loopback ports for listeners tests are about to configure, shared by the
//! proxy's integration tests and the binary's end-to-end tests.

use std::sync::atomic::{AtomicU16, Ordering};

/// Ports handed out per process: each crate's integration tests are one
/// binary, so one block serves every test of a crate.
const BLOCK: u16 = 2_000;
/// Blocks between 20,000 and the kernel's ephemeral range (32,768).
const BLOCKS: u32 = 6;

/// A loopback port for a listener a test is about to configure. Ports come
/// from below the kernel's ephemeral range, so no client socket or port-0
/// bind can take one between this call and the bind that uses it; each is
/// handed out once per process, so parallel tests never race for one; and
/// where the block starts depends on the process id, so test binaries
/// running at the same time rarely share a block. Free for TCP and UDP.
pub fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % BLOCKS) as u16 * BLOCK;
    loop {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        assert!(n < BLOCK, "this test binary used all {BLOCK} of its ports");
        let port = base + n;
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
        if tcp && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
