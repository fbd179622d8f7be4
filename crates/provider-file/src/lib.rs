//! The standalone provider: a directory of Kubernetes YAML/JSON becomes a
//! [`coxswain_api::Snapshot`]. Errors are located (`file:line:column`), a
//! file that stops parsing keeps its last good version in the snapshot, and
//! [`Watcher`] re-reads only the files that changed.

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

mod documents;
mod error;
mod files;
mod kinds;
mod locate;
mod parse;
mod provider;
mod validate;
mod watch;

pub use error::LoadError;
pub use files::is_config_file;
pub use provider::{FileProvider, Loaded, load_dir};
pub use watch::{Reload, Watcher};
