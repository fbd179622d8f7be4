//! An upgraded request's record (WebSocket, extended CONNECT) waits for
//! its tunnel: it is written when the tunnel closes, with the bytes the
//! tunnel carried and its whole duration. The 101's body ends (and hands
//! over the record) and the tunnel closes in either order; whichever comes
//! second writes the record.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError}; // lock-ok: taken twice per upgraded connection, never per request

use super::http::Pending;
use crate::l4::splice::ConnectionBytes;

/// Shared by an upgraded request's record and its tunnel.
#[derive(Clone, Default)]
pub struct TunnelLog(Arc<Shared>);

#[derive(Default)]
struct Shared {
    bytes: ConnectionBytes,
    state: Mutex<State>,
}

#[derive(Default)]
enum State {
    #[default]
    Open,
    /// The response is done; its record waits for the tunnel.
    Waiting(Pending),
    Closed,
}

impl TunnelLog {
    /// The tunnel's byte counts, kept by its relay.
    pub fn bytes(&self) -> &ConnectionBytes {
        &self.0.bytes
    }

    /// The response is done: its record is written now if the tunnel has
    /// closed, else when it does.
    pub(super) fn hand_over(&self, pending: Pending) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        match *state {
            State::Closed => self.write(pending),
            _ => *state = State::Waiting(pending),
        }
    }

    /// The tunnel closed (or never opened).
    pub fn closed(&self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *state, State::Closed) {
            State::Waiting(pending) => self.write(pending),
            State::Open | State::Closed => {}
        }
    }

    fn write(&self, mut pending: Pending) {
        let bytes = &self.0.bytes;
        pending.record.bytes_received += bytes.inbound.load(Ordering::Relaxed);
        pending.record.bytes_sent += bytes.outbound.load(Ordering::Relaxed);
        pending.send();
    }
}

/// Tells its [`TunnelLog`] the tunnel closed when dropped: on every way
/// out of a relay, including one that never ran.
pub struct ClosesOnDrop(pub Option<TunnelLog>);

impl Drop for ClosesOnDrop {
    fn drop(&mut self) {
        if let Some(log) = &self.0 {
            log.closed();
        }
    }
}
