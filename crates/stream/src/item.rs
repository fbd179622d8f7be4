//! One resource of the stream: its body (JSON), the body's digest and,
//! once a proxy needed it, the body decoded, so an unchanged resource is
//! not parsed again. Also the two resources that exist only on the wire:
//! a socket's and a listener's heads.

use std::fmt;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use coxswain_ir::{Cluster, Extension, Listener, ProxyProtocol, Route, Transport};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::resources::ResourceError;

/// SHA-256 of a body; hex on the wire.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub fn of(body: &[u8]) -> Digest {
        Digest(Sha256::digest(body).into())
    }

    /// From hex; `None` unless 64 hex digits.
    pub fn parse(hex: &str) -> Option<Digest> {
        let bytes = hex.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let text = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(text, 16).ok()?;
        }
        Some(Digest(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A resource's body and its digest.
#[derive(Clone, Debug)]
pub struct Item {
    digest: Digest,
    body: Bytes,
    decoded: OnceLock<Decoded>,
}

impl Item {
    pub fn new(body: Bytes) -> Item {
        Item {
            digest: Digest::of(&body),
            body,
            decoded: OnceLock::new(),
        }
    }

    /// `body` if it matches `digest` (hex).
    pub fn verified(name: &str, digest: &str, body: Bytes) -> Result<Item, ResourceError> {
        let item = Item::new(body);
        if Digest::parse(digest) != Some(item.digest) {
            return Err(ResourceError::Digest {
                name: name.to_string(),
            });
        }
        Ok(item)
    }

    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// JSON.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body decoded as the resource `name` names (cached).
    pub(crate) fn decoded(&self, name: &str) -> Result<&Decoded, ResourceError> {
        if let Some(decoded) = self.decoded.get() {
            return Ok(decoded);
        }
        let decoded = Decoded::parse(name, &self.body)?;
        Ok(self.decoded.get_or_init(|| decoded))
    }
}

/// The digest names the body.
impl PartialEq for Item {
    fn eq(&self, other: &Item) -> bool {
        self.digest == other.digest
    }
}

impl Eq for Item {}

/// A resource's body decoded.
#[derive(Clone, Debug)]
pub(crate) enum Decoded {
    Socket(Arc<SocketHead>),
    Listener(Arc<ListenerHead>),
    Route(Arc<Route>),
    Cluster(Arc<Cluster>),
    Extension(Arc<Extension>),
}

impl Decoded {
    fn parse(name: &str, body: &[u8]) -> Result<Decoded, ResourceError> {
        Ok(match name.split('/').next().unwrap_or_default() {
            "socket" => Decoded::Socket(Arc::new(decode(name, body)?)),
            "listener" => Decoded::Listener(Arc::new(decode(name, body)?)),
            "route" => Decoded::Route(Arc::new(decode(name, body)?)),
            "cluster" => Decoded::Cluster(Arc::new(decode(name, body)?)),
            "extension" => Decoded::Extension(Arc::new(decode(name, body)?)),
            _ => return Err(ResourceError::Unknown(name.to_string())),
        })
    }
}

fn decode<T: serde::de::DeserializeOwned>(name: &str, body: &[u8]) -> Result<T, ResourceError> {
    serde_json::from_slice(body).map_err(|e| ResourceError::Decode {
        name: name.to_string(),
        error: e.to_string(),
    })
}

/// A socket resource: the socket without its listeners, which are named.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SocketHead {
    pub(crate) transport: Transport,
    pub(crate) address: std::net::IpAddr,
    pub(crate) port: u16,
    pub(crate) proxy_protocol: Option<ProxyProtocol>,
    pub(crate) listeners: Vec<String>,
}

/// A listener resource: the listener without its HTTP routes, which are
/// named (in the order they are matched).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ListenerHead {
    pub(crate) listener: Listener,
    pub(crate) routes: Vec<String>,
}
