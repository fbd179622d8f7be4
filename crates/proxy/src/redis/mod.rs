//! A minimal Redis (RESP2) client: one pipelined connection per server
//! address, shared by every request through a channel, so the request path
//! takes no lock. Only what the global RateLimit needs: scripts.
//!
//! Written here rather than taken from the `redis` crate, which would bring
//! a URL parser and its Unicode tables into the data plane for a protocol
//! this small.

pub mod client;
pub mod resp;

pub use client::{Client, StoreError};
pub use resp::Value;
