//! HTTP building blocks: paths, redirects, header hygiene, bodies.

pub mod authority;
pub mod body;
pub mod cors;
pub mod grpc;
pub mod grpc_status;
pub mod headers;
pub mod limits;
pub mod linger;
pub mod normalize;
pub mod path;
pub mod redirect;
pub mod server;
pub mod session;
pub mod tee;
pub mod upgrade;
