//! Writing status back: pure merging in [`merge`], the write loop in
//! [`writer`].

pub mod merge;
mod resources;
pub mod writer;

pub use writer::{StatusJob, WriterConfig};
