//! Kubernetes provider: kube-rs watchers of every kind the translator
//! reads build the same [`coxswain_api::Snapshot`] the file provider
//! builds; bursts are coalesced into one translation, and a change to a
//! route's or Gateway's status alone (our own write-back) is not
//! translated; the leader (by
//! Lease) writes status and per-Gateway Services, and provisions the proxy
//! pools of dedicated Gateways (`pool*`). Never depends on the
//! proxy: the binary plugs it in through [`Dataplane`].

// Input (files, API objects, requests) must never panic the gateway.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod address_pool;
pub mod addresses;
mod backoff;
mod coalesce;
mod controller;
pub mod gateway_labels;
pub mod gateway_service;
mod ingress_problems;
pub mod labels;
pub mod leader;
pub mod lease;
mod metrics;
mod ours;
pub mod pool;
pub mod pool_plan;
pub mod pool_service;
pub mod pool_status;
pub mod status;
pub mod store;
pub mod stream_ca;
pub mod stream_credentials;
pub mod stream_feed;
mod watch;

pub use address_pool::AddressPool;
pub use addresses::AddressMode;
pub use controller::{ControllerConfig, Dataplane, Timing, run, translate_store};
pub use leader::{LeaseConfig, default_identity, release};
pub use metrics::Metrics;
pub use pool::PoolSettings;
pub use pool_status::{StreamFeedback, overlay_pool_status};

/// Re-exported so the binary builds a client without naming kube itself.
pub use kube::Client;
