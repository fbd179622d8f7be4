//! What the access log says of a connection's TLS: the version and the
//! SNI the client sent.

use std::sync::Arc;

use rustls::ProtocolVersion;

#[derive(Clone, Debug, Default)]
pub struct TlsInfo {
    /// `TLSv1.2` or `TLSv1.3`; `None` for passthrough (the gateway does
    /// not take part in the handshake).
    pub version: Option<&'static str>,
    pub sni: Option<Arc<str>>,
}

impl TlsInfo {
    pub fn new(version: Option<ProtocolVersion>, sni: Option<&str>) -> Self {
        TlsInfo {
            version: version.map(version_name),
            sni: sni.map(Arc::from),
        }
    }
}

fn version_name(version: ProtocolVersion) -> &'static str {
    match version {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        ProtocolVersion::TLSv1_1 => "TLSv1.1",
        ProtocolVersion::TLSv1_0 => "TLSv1.0",
        _ => "unknown",
    }
}
