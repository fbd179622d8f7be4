//! Pod IP allocation from one IPv4 CIDR. The first host address belongs to
//! the bridge (the pods' gateway). Allocation walks forward from the last
//! address handed out, so a freed address is not reused at once (stale
//! EndpointSlices would otherwise point at a new pod).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub network: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not an IPv4 CIDR (a.b.c.d/n)"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|e| format!("{text:?}: bad address: {e}"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|e| format!("{text:?}: bad prefix: {e}"))?;
        if !(8..=30).contains(&prefix) {
            return Err(format!("{text:?}: prefix must be between 8 and 30"));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Self {
            network: Ipv4Addr::from(u32::from(addr) & mask),
            prefix,
        })
    }

    fn first(&self) -> u32 {
        u32::from(self.network)
    }

    fn broadcast(&self) -> u32 {
        self.first() | (u32::MAX >> self.prefix)
    }

    /// The bridge address: the first host address.
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.first() + 1)
    }

    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        (self.first()..=self.broadcast()).contains(&u32::from(ip))
    }
}

#[derive(Debug)]
pub struct IpPool {
    cidr: Cidr,
    used: BTreeSet<u32>,
    /// The last address handed out.
    cursor: u32,
}

impl IpPool {
    pub fn new(cidr: Cidr) -> Self {
        Self {
            cidr,
            used: BTreeSet::new(),
            cursor: cidr.first() + 1,
        }
    }

    pub fn cidr(&self) -> Cidr {
        self.cidr
    }

    /// The next free pod address, or `None` when the range is full.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        // Pod addresses: gateway+1 ..= broadcast-1.
        let low = self.cidr.first() + 2;
        let high = self.cidr.broadcast() - 1;
        if low > high {
            return None;
        }
        let span = high - low + 1;
        let start = if self.cursor < low || self.cursor >= high {
            low
        } else {
            self.cursor + 1
        };
        for step in 0..span {
            let candidate = low + (start - low + step) % span;
            if self.used.insert(candidate) {
                self.cursor = candidate;
                return Some(Ipv4Addr::from(candidate));
            }
        }
        None
    }

    /// Takes a specific pod address (e.g. the one a pod had before the
    /// fakelet restarted); false when it is taken or not a pod address.
    pub fn reserve(&mut self, ip: Ipv4Addr) -> bool {
        let n = u32::from(ip);
        let is_pod_address = n >= self.cidr.first() + 2 && n < self.cidr.broadcast();
        is_pod_address && self.used.insert(n)
    }

    pub fn release(&mut self, ip: Ipv4Addr) {
        self.used.remove(&u32::from(ip));
    }

    #[cfg(test)]
    pub fn in_use(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalises_cidrs() {
        let cidr = Cidr::parse("10.244.0.9/24").unwrap();
        assert_eq!(cidr.network, Ipv4Addr::new(10, 244, 0, 0));
        assert_eq!(cidr.gateway(), Ipv4Addr::new(10, 244, 0, 1));
        assert!(cidr.contains(Ipv4Addr::new(10, 244, 0, 255)));
        assert!(!cidr.contains(Ipv4Addr::new(10, 244, 1, 0)));
        assert!(Cidr::parse("10.244.0.0").is_err());
        assert!(Cidr::parse("10.244.0.0/31").is_err());
        assert!(Cidr::parse("10.244.0.0/x").is_err());
        assert!(Cidr::parse("nope/24").is_err());
    }

    #[test]
    fn allocates_past_the_gateway_and_never_twice() {
        let mut pool = IpPool::new(Cidr::parse("10.244.0.0/24").unwrap());
        let a = pool.allocate().unwrap();
        let b = pool.allocate().unwrap();
        assert_eq!(a, Ipv4Addr::new(10, 244, 0, 2));
        assert_eq!(b, Ipv4Addr::new(10, 244, 0, 3));
        assert_eq!(pool.in_use(), 2);
    }

    #[test]
    fn freed_addresses_are_reused_only_after_wrapping() {
        let mut pool = IpPool::new(Cidr::parse("10.0.0.0/29").unwrap());
        // Hosts .2 ..= .6 (the gateway is .1, broadcast .7).
        let all: Vec<_> = std::iter::from_fn(|| pool.allocate()).collect();
        assert_eq!(all.len(), 5);
        assert_eq!(all[4], Ipv4Addr::new(10, 0, 0, 6));
        assert!(pool.allocate().is_none());
        pool.release(Ipv4Addr::new(10, 0, 0, 3));
        pool.release(Ipv4Addr::new(10, 0, 0, 5));
        assert_eq!(pool.allocate(), Some(Ipv4Addr::new(10, 0, 0, 3)));
        assert_eq!(pool.allocate(), Some(Ipv4Addr::new(10, 0, 0, 5)));
        assert!(pool.allocate().is_none());
    }

    #[test]
    fn reserves_only_free_pod_addresses() {
        let mut pool = IpPool::new(Cidr::parse("10.0.0.0/24").unwrap());
        assert!(pool.reserve(Ipv4Addr::new(10, 0, 0, 2)));
        assert!(!pool.reserve(Ipv4Addr::new(10, 0, 0, 2)));
        assert!(!pool.reserve(Ipv4Addr::new(10, 0, 0, 1)), "gateway");
        assert!(!pool.reserve(Ipv4Addr::new(10, 0, 0, 255)), "broadcast");
        assert!(!pool.reserve(Ipv4Addr::new(10, 0, 1, 5)), "outside");
        assert_eq!(pool.allocate(), Some(Ipv4Addr::new(10, 0, 0, 3)));
    }

    #[test]
    fn walks_forward_instead_of_reusing_at_once() {
        let mut pool = IpPool::new(Cidr::parse("10.0.0.0/24").unwrap());
        let first = pool.allocate().unwrap();
        pool.release(first);
        assert_ne!(pool.allocate().unwrap(), first);
    }
}
