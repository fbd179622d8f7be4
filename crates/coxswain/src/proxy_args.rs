//! Data-plane flags shared by `run` and `controller`.

use std::time::Duration;

use clap::ValueEnum;
use coxswain_ir::{AccessLogField, IpCidr};
use coxswain_proxy::{
    AccessLogFormat, AccessLogOptions, AccessLogTarget, EscapedSlashes, ForwardedTrust, H2Limits,
    HttpLimits, OverloadLimits, PathOptions, ProxyOptions, UdpOptions, open_access_log,
};

use crate::duration::parse_duration;

#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// Threads serving connections (0: one per CPU core). As nginx's
    /// worker_processes: one worker per core the gateway may use.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub worker_threads: usize,
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
    /// A UDP session (one client address) with no datagram either way for
    /// this long is evicted; its next datagram picks a backend afresh.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_udp_session_timeout: Duration,
    /// At most this many UDP sessions per listener; beyond it the least
    /// recently active session is evicted.
    #[arg(long, default_value_t = 16_384, value_name = "N")]
    pub proxy_udp_max_sessions: usize,
    /// A TCP or TLS (TCPRoute/TLSRoute) connection, or an upgraded HTTP
    /// connection (WebSocket), with no bytes either way for this long is
    /// closed.
    #[arg(long, default_value = "1h", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_tcp_idle_timeout: Duration,
    /// Connect timeout for backend connections (a pod that vanished costs
    /// this long before the request is retried on another).
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub proxy_connect_timeout: Duration,
    /// A request head must arrive within this time (slowloris).
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub http_header_read_timeout: Duration,
    /// Close a client connection with no request in flight for this long.
    #[arg(long, default_value = "300s", value_parser = parse_duration, value_name = "DURATION")]
    pub http_idle_timeout: Duration,
    /// Largest request head in bytes (431 above it).
    #[arg(long, default_value_t = 64 * 1024, value_name = "BYTES")]
    pub http_max_header_bytes: usize,
    /// Most header fields in one request (431 above it).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub http_max_headers: usize,
    /// Longest request target in bytes (414 above it).
    #[arg(long, default_value_t = 8 * 1024, value_name = "BYTES")]
    pub http_max_uri_bytes: usize,
    /// Requests per HTTP/1 connection before it is closed (0: no limit).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub http_max_requests_per_connection: u64,
    /// HTTP/2 streams in flight per connection.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub http2_max_concurrent_streams: u32,
    /// Client connections, all listeners together (0: no limit); beyond it
    /// the proxy stops accepting until one ends.
    #[arg(long, default_value_t = 50_000, value_name = "N")]
    pub max_connections: usize,
    /// Client connections per listener socket (0: no limit).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub max_connections_per_listener: usize,
    /// Requests in flight beyond which new ones get 503 (0: no limit).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub max_requests_in_flight: usize,
    /// Peers (CIDR or address; repeatable) whose X-Forwarded-For,
    /// -Proto and -Host are kept. From anyone else they are replaced.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<IpCidr>,
    /// Believe X-Forwarded-* from every peer (like Envoy's
    /// xff_num_trusted_hops > 0): only behind your own load balancer.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub xff_num_trusted_hops: u32,
    /// Send backends the verified client certificate's identity (hash,
    /// subject, URI and DNS names) in x-forwarded-client-cert. A client's
    /// own x-forwarded-client-cert is always removed.
    #[arg(long)]
    pub forward_client_cert: bool,
    #[command(flatten)]
    pub tracing: crate::tracing_args::TracingArgs,
    /// Where access-log records go: `off`, `stdout`, `stderr`, or a file
    /// path (appended to, created when missing). One record per HTTP
    /// request, L4 connection and UDP session; see docs/observability.md.
    #[arg(long, default_value = "stdout", value_parser = parse_access_log_target, value_name = "off|stdout|stderr|PATH")]
    pub access_log: AccessLogTarget,
    /// Access-log line format: one JSON object per line, or `key=value` text.
    #[arg(long, default_value = "json", value_name = "FORMAT")]
    pub access_log_format: AccessLogFormatArg,
    /// The share of requests (connections, sessions) logged, 0 to 1.
    #[arg(long, default_value_t = 1.0, value_parser = parse_ratio, value_name = "RATIO")]
    pub access_log_sample: f64,
    /// The fields records carry, comma-separated (default: all of them);
    /// names as in docs/observability.md.
    #[arg(long, value_delimiter = ',', value_parser = parse_access_log_field, value_name = "FIELD,...")]
    pub access_log_fields: Vec<AccessLogField>,
    /// Responses carry the request's `x-request-id` (the client's own
    /// when it sent a valid one, else the generated one).
    #[arg(long)]
    pub request_id_response: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AccessLogFormatArg {
    Json,
    Text,
}

/// `off`, `stdout`, `stderr`, or a file that can be appended to.
fn parse_access_log_target(value: &str) -> Result<AccessLogTarget, String> {
    Ok(match value {
        "off" => AccessLogTarget::Off,
        "stdout" | "-" => AccessLogTarget::Stdout,
        "stderr" => AccessLogTarget::Stderr,
        path => {
            let path = std::path::PathBuf::from(path);
            // Checked now, so a wrong path fails the start, not every line.
            open_access_log(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            AccessLogTarget::File(path)
        }
    })
}

fn parse_ratio(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("{value:?} is not a ratio from 0 to 1")),
    }
}

fn parse_access_log_field(value: &str) -> Result<AccessLogField, String> {
    AccessLogField::parse(value.trim()).ok_or_else(|| {
        let names: Vec<&str> = AccessLogField::ALL.iter().map(|f| f.name()).collect();
        format!("unknown field {value:?}; fields: {}", names.join(", "))
    })
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EscapedSlashesArg {
    Keep,
    Reject,
}

impl ProxyArgs {
    pub fn options(&self) -> anyhow::Result<ProxyOptions> {
        Ok(ProxyOptions {
            drain_timeout: self.drain_timeout,
            path: PathOptions {
                escaped_slashes: match self.path_escaped_slashes {
                    EscapedSlashesArg::Keep => EscapedSlashes::Keep,
                    EscapedSlashesArg::Reject => EscapedSlashes::Reject,
                },
                merge_slashes: self.merge_slashes,
            },
            udp: UdpOptions {
                session_timeout: self.proxy_udp_session_timeout,
                max_sessions: self.proxy_udp_max_sessions.max(1),
            },
            tcp_idle_timeout: self.proxy_tcp_idle_timeout,
            connect_timeout: self.proxy_connect_timeout,
            http: HttpLimits {
                header_read_timeout: self.http_header_read_timeout,
                idle_timeout: self.http_idle_timeout,
                max_header_bytes: self.http_max_header_bytes,
                max_headers: self.http_max_headers,
                max_uri_bytes: self.http_max_uri_bytes,
                max_requests_per_connection: self.http_max_requests_per_connection,
                h2: H2Limits {
                    max_concurrent_streams: self.http2_max_concurrent_streams,
                    ..H2Limits::default()
                },
            },
            forwarded: ForwardedTrust {
                trusted_cidrs: self.trusted_proxies.clone(),
                trusted_hops: self.xff_num_trusted_hops,
            },
            forward_client_cert: self.forward_client_cert,
            access_log: AccessLogOptions {
                target: self.access_log.clone(),
                format: match self.access_log_format {
                    AccessLogFormatArg::Json => AccessLogFormat::Json,
                    AccessLogFormatArg::Text => AccessLogFormat::Text,
                },
                sample_ratio: self.access_log_sample,
                fields: self.access_log_fields.clone(),
            },
            echo_request_id: self.request_id_response,
            overload: OverloadLimits {
                max_connections: self.max_connections,
                max_connections_per_listener: self.max_connections_per_listener,
                max_requests_in_flight: self.max_requests_in_flight,
            },
            tracing: self.tracing.options()?,
        })
    }
}
