//! Every proxy integration test in one binary: one link and one binary on
//! disk instead of one per file. `lookup_allocations` stays apart because its
//! counting global allocator must not see other tests' allocations.

mod common;
#[path = "../shapes/mod.rs"]
mod shapes;

mod backend_policy;
mod backend_tls;
mod backends;
mod basic_auth;
mod client_certs;
mod compression;
mod cors;
mod endpoint_churn;
mod extension_filters;
mod external_auth;
mod filters;
mod forwarded;
mod h2_attacks;
mod https;
mod ingress_wildcards;
mod jwt_auth;
mod l4;
mod lifecycle;
mod limits;
mod lookup_index;
mod mirrors;
mod parking;
mod path_normalization;
mod path_rewrite;
mod phase_order;
mod protocols;
mod proxy_protocol;
mod rate_limit;
mod rate_limit_global;
mod retries;
mod retry_budget;
mod routing;
mod session_persistence;
mod size_limit;
mod smuggling;
