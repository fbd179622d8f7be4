//! `proxy_protocol`: the PROXY protocol v1/v2 header parser
//! (`coxswain_proxy::listen::proxy_protocol::parse`) on arbitrary bytes.
//!
//! Properties:
//! - never panics;
//! - a complete header lies inside the input, starts with the v1 prefix or
//!   the v2 signature, and is at most 107 (v1) or 16 + 4096 (v2) bytes;
//! - "need more" is only said of inputs shorter than the longest header,
//!   so a client cannot make the reader buffer without bound;
//! - the answer does not depend on how much arrived: every prefix of the
//!   input gets either "need more" or the input's own answer.

use coxswain_proxy::listen::proxy_protocol::{Parse, V1_MAX, V2_MAX_PAYLOAD, V2_SIGNATURE, parse};

const LONGEST: usize = 16 + V2_MAX_PAYLOAD;

pub fn check(data: &[u8]) {
    let data = &data[..data.len().min(LONGEST + 64)];
    let whole = parse(data);
    match &whole {
        Ok(Parse::Complete(h)) => {
            assert!(h.len <= data.len(), "header longer than the input");
            let header = &data[..h.len];
            if header.starts_with(b"PROXY ") {
                assert!(h.len <= V1_MAX, "v1 header of {} bytes", h.len);
                assert!(header.ends_with(b"\r\n"));
            } else {
                assert!(header.starts_with(&V2_SIGNATURE), "neither v1 nor v2");
                assert!(h.len <= LONGEST);
            }
        }
        Ok(Parse::NeedMore) => assert!(data.len() < LONGEST, "waits on {} bytes", data.len()),
        Ok(Parse::Absent) | Err(_) => {}
    }
    for cut in 0..data.len() {
        let part = parse(&data[..cut]);
        assert!(
            part == Ok(Parse::NeedMore) || part == whole,
            "prefix of {cut} bytes: {part:?}, whole input: {whole:?}"
        );
    }
}
