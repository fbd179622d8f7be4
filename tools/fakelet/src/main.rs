//! coxswain-fakelet: a stand-in kubelet for tests (see README.md).

mod env;
mod image_map;
mod ipam;
mod volumes;

fn main() {}
