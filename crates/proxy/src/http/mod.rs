//! HTTP building blocks: paths, redirects, header hygiene, bodies,
//! compression.

pub mod accept_encoding;
pub mod activity;
pub mod authority;
pub mod body;
pub mod compress;
pub mod cors;
pub mod grpc;
pub mod grpc_status;
pub mod headers;
pub mod limits;
pub mod linger;
pub mod normalize;
pub mod park;
pub mod path;
pub mod redirect;
pub mod request_id;
pub mod server;
pub mod session;
pub mod stack_fmt;
pub mod tee;
pub mod unpin;
pub mod upgrade;
