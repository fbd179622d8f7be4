//! Writing status back: pure merging in [`merge`], the write loop in
//! [`writer`].

mod job;
pub mod merge;
mod resources;
mod settled;
pub mod writer;

pub use job::{StatusJob, WriterConfig};
