//! What a data plane reports back about a config it was given, so status
//! says what is really served (and, later, what a remote proxy rejected).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::Transport;

/// A socket of the config that could not be bound, with the OS error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnboundSocket {
    pub transport: Transport,
    pub address: SocketAddr,
    pub error: String,
}
