//! Every end-to-end test of the `coxswain` binary in one test binary: one
//! link and one binary on disk instead of one per file.

mod support;

mod access_log;
mod backend_policy;
mod backend_tls;
mod basic_auth;
mod check;
mod client_traffic_policy;
mod compression;
mod console;
mod echo;
mod endpoint_churn;
mod explain;
mod extension_filters;
mod external_auth;
mod grpc;
mod ingress;
mod ingress_annotations;
mod jwt_auth;
mod l4;
mod listener_set;
mod migrate;
mod migrate_cli;
mod mtls;
mod path_rewrite;
mod quickstart;
mod rate_limit;
mod rate_limit_global;
mod reload;
mod shutdown;
mod size_limit;
mod status_truth;
mod tracing;
mod websocket;
