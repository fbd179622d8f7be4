//! Policies attached to backends or Gateways by `targetRefs`, one file per
//! policy kind; each finds what it targets, resolves conflicts and writes
//! `status.ancestors` for the Gateways it affects.

pub mod backend_tls;
