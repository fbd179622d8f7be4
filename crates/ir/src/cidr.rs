//! IP address ranges (`10.0.0.0/8`, `2001:db8::/32`).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A CIDR block; the address is stored with its host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpCidr {
    network: IpAddr,
    prefix: u8,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CidrError(String);

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CidrError {}

fn mask(addr: IpAddr, prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let m = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let m = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6((bits & m).into())
        }
    }
}

impl IpCidr {
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self, CidrError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(CidrError(format!(
                "prefix /{prefix} is longer than {max} bits"
            )));
        }
        Ok(IpCidr {
            network: mask(addr, prefix),
            prefix,
        })
    }

    /// Is `ip` inside? An IPv4-mapped IPv6 address counts as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.prefix) == self.network
    }
}

impl FromStr for IpCidr {
    type Err = CidrError;
    /// `addr/prefix`, or a bare address (a single host).
    fn from_str(s: &str) -> Result<Self, CidrError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| CidrError(format!("{s:?} is not an IP address or CIDR")))?;
        let prefix = match prefix {
            Some(p) => p
                .trim()
                .parse()
                .map_err(|_| CidrError(format!("{s:?}: prefix is not a number")))?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        IpCidr::new(addr, prefix)
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl Serialize for IpCidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for IpCidr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let net: IpCidr = "10.1.2.3/8".parse().unwrap();
        assert_eq!(net.to_string(), "10.0.0.0/8");
        assert!(net.contains("10.200.0.1".parse().unwrap()));
        assert!(!net.contains("11.0.0.1".parse().unwrap()));
        assert!(
            net.contains("::ffff:10.9.9.9".parse().unwrap()),
            "IPv4-mapped"
        );
        let v6: IpCidr = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains("2001:db8:1::5".parse().unwrap()));
        assert!(!v6.contains("10.0.0.1".parse().unwrap()));
        let host: IpCidr = "192.0.2.7".parse().unwrap();
        assert!(host.contains("192.0.2.7".parse().unwrap()));
        assert!(!host.contains("192.0.2.8".parse().unwrap()));
        let all: IpCidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "10.0.0.0/33", "::/129", "10.0.0/8", "x/8", "10.0.0.0/x"] {
            assert!(bad.parse::<IpCidr>().is_err(), "{bad}");
        }
    }
}
