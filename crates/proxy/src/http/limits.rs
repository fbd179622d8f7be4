//! Limits on client connections, set explicitly rather than left to hyper's
//! defaults (which have changed between versions). Defaults follow what
//! Envoy recommends for edge proxies where the two overlap.

use std::time::Duration;

/// HTTP/1 and HTTP/2 server limits.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// A request head (request line and headers) must arrive within this
    /// time of the connection starting to wait for it (slowloris).
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed
    /// (HTTP/1 keep-alive and idle HTTP/2 alike; also before the first
    /// request).
    pub idle_timeout: Duration,
    /// Largest request head in bytes (HTTP/1: 431 above it).
    pub max_header_bytes: usize,
    /// Most header fields in one request (HTTP/1: 431 above it).
    pub max_headers: usize,
    /// Longest request target in bytes (414 above it).
    pub max_uri_bytes: usize,
    /// Requests served on one HTTP/1 connection before it is closed
    /// (`Connection: close` on the last response); 0 for no limit.
    pub max_requests_per_connection: u64,
    pub h2: H2Limits,
}

/// HTTP/2 server settings and abuse limits.
#[derive(Clone, Debug)]
pub struct H2Limits {
    pub max_concurrent_streams: u32,
    /// Decoded header list size (also bounds CONTINUATION floods).
    pub max_header_list_size: u32,
    /// Streams a client may open and reset before the server accepts them
    /// (Rapid Reset, CVE-2023-44487) before the connection gets GOAWAY.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server resets because of the client's errors before the
    /// connection gets GOAWAY (MadeYouReset, CVE-2025-8671).
    pub max_local_error_reset_streams: usize,
    pub initial_stream_window: u32,
    pub initial_connection_window: u32,
    /// PING an HTTP/2 connection this often while it is open...
    pub keep_alive_interval: Duration,
    /// ...and close it when a PING is not answered within this time.
    pub keep_alive_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            max_uri_bytes: 8 * 1024,
            max_requests_per_connection: 0,
            h2: H2Limits::default(),
        }
    }
}

impl Default for H2Limits {
    fn default() -> Self {
        H2Limits {
            max_concurrent_streams: 100,
            max_header_list_size: 64 * 1024,
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 100,
            initial_stream_window: 64 * 1024,
            initial_connection_window: 1024 * 1024,
            keep_alive_interval: Duration::from_secs(60),
            keep_alive_timeout: Duration::from_secs(20),
        }
    }
}
