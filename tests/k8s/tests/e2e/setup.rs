//! The environment the scenarios share: brought up once, torn down on
//! drop. It lives in the library (`coxswain_k8s_tests::env`) so the
//! Kubernetes-mode reload benchmark starts the very same one.

pub use coxswain_k8s_tests::env::*;
