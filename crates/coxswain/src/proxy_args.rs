//! Data-plane flags shared by `run` and `controller`.

use std::time::Duration;

use clap::ValueEnum;
use coxswain_proxy::{EscapedSlashes, PathOptions, ProxyOptions};

use crate::duration::parse_duration;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// How long in-flight requests may finish after SIGTERM (e.g. 30s, 500ms).
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
    pub drain_timeout: Duration,
    /// What a request path containing `%2F` or `%5C` gets: `keep` forwards
    /// it unchanged (the escape never splits a segment for matching),
    /// `reject` answers 400.
    #[arg(long, default_value = "keep", value_name = "ACTION")]
    pub path_escaped_slashes: EscapedSlashesArg,
    /// Collapse repeated slashes in request paths before matching and
    /// forwarding (`//a///b` becomes `/a/b`).
    #[arg(long)]
    pub merge_slashes: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EscapedSlashesArg {
    Keep,
    Reject,
}

impl ProxyArgs {
    pub fn options(&self) -> ProxyOptions {
        ProxyOptions {
            drain_timeout: self.drain_timeout,
            path: PathOptions {
                escaped_slashes: match self.path_escaped_slashes {
                    EscapedSlashesArg::Keep => EscapedSlashes::Keep,
                    EscapedSlashesArg::Reject => EscapedSlashes::Reject,
                },
                merge_slashes: self.merge_slashes,
            },
            ..ProxyOptions::default()
        }
    }
}
