//! The stream's messages, written by hand (no protoc at build time).
//! Service `coxswain.stream.v1.ConfigStream`, one bidirectional method:
//!
//! ```text
//! rpc Subscribe(stream ProxyMessage) returns (stream ConfigUpdate);
//! ```
//!
//! The proxy opens with a `Hello` naming what it already holds; the
//! controller answers with the difference, then with each later change.
//! Every update is acknowledged (`Ack`) or rejected (`Nack`) before the
//! next one is sent.

/// `/package.Service/Method` of the one RPC.
pub const SUBSCRIBE_PATH: &str = "/coxswain.stream.v1.ConfigStream/Subscribe";

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProxyMessage {
    #[prost(oneof = "proxy_message::Kind", tags = "1, 2, 3")]
    pub kind: Option<proxy_message::Kind>,
}

pub mod proxy_message {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(message, tag = "1")]
        Hello(super::Hello),
        #[prost(message, tag = "2")]
        Ack(super::Ack),
        #[prost(message, tag = "3")]
        Nack(super::Nack),
    }
}

/// First message of a subscription.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Hello {
    /// The proxy's name (its pod), for logs.
    #[prost(string, tag = "1")]
    pub node: String,
    /// The IR version the proxy understands.
    #[prost(uint32, tag = "2")]
    pub ir_version: u32,
    /// The resources the proxy serves now (from its last-good copy or an
    /// earlier connection): only differences are sent.
    #[prost(message, repeated, tag = "3")]
    pub held: Vec<Held>,
}

#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Held {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub digest: String,
}

/// The update of this version is served.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Ack {
    #[prost(string, tag = "1")]
    pub version: String,
    /// Sockets of it that could not be bound (JSON `[UnboundSocket]`).
    #[prost(bytes = "vec", tag = "2")]
    pub unbound: Vec<u8>,
}

/// The update of this version was not applied; the proxy keeps serving
/// what it had.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Nack {
    #[prost(string, tag = "1")]
    pub version: String,
    #[prost(string, tag = "2")]
    pub error: String,
}

/// A change to the proxy's resources. `version` names the whole set after
/// it is applied.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigUpdate {
    #[prost(string, tag = "1")]
    pub version: String,
    #[prost(uint32, tag = "2")]
    pub ir_version: u32,
    #[prost(message, repeated, tag = "3")]
    pub upserts: Vec<Resource>,
    #[prost(string, repeated, tag = "4")]
    pub removals: Vec<String>,
    /// More parts of this update follow (see `parts`); the proxy applies
    /// and answers the joined update after the last.
    #[prost(bool, tag = "5")]
    pub more: bool,
}

/// One piece of a Gateway's IR (see `resources`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    #[prost(string, tag = "1")]
    pub name: String,
    /// SHA-256 of `body`, hex.
    #[prost(string, tag = "2")]
    pub digest: String,
    /// JSON.
    #[prost(bytes = "bytes", tag = "3")]
    pub body: bytes::Bytes,
}
