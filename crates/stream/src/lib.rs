//! The config stream between the controller and dedicated proxy pools:
//! gRPC (tonic, hand-written messages) over mutual TLS with a private CA.
//! Each proxy proves which Gateway it serves with its client certificate
//! and receives only that Gateway's share of the IR, as content-addressed
//! resources: after the first update, only what changed. It acknowledges
//! or rejects every update and keeps the last acknowledged one on disk.
//! Depends on the IR only: no Kubernetes here.

// Input (the network, files) must never panic the gateway.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod assemble;
pub mod client;
pub mod encoder;
pub mod feedback;
pub mod identity;
pub mod item;
pub mod parts;
pub mod pki;
pub mod resources;
pub mod server;
pub mod serving;
pub mod snapshot;
pub mod tls;
pub mod wire;

pub use client::{Applier, Subscription, subscribe};
pub use encoder::Encoder;
pub use feedback::{PoolReport, Reports};
pub use identity::GatewayIdentity;
pub use pki::{Authority, Credentials};
pub use resources::{Resources, Undo};
pub use server::{Hub, Published, serve};
pub use serving::{ServingError, serving_config};
