//! Which Service holds which load-balancer address. Addresses come from the
//! `--load-balancer-pool` CIDR (its network, first host and broadcast
//! addresses are never handed out, as with pod addresses).

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

use crate::ipam::IpPool;
use crate::lb_plan::{Requested, ServiceKey};

/// Why a Service gets no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssignError {
    /// `spec.loadBalancerIP` is outside the pool (or not IPv4).
    NotInPool(String),
    /// `spec.loadBalancerIP` is held by another Service.
    Taken { ip: Ipv4Addr, by: String },
    /// Every address of the pool is in use.
    Exhausted,
}

impl fmt::Display for AssignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssignError::NotInPool(ip) => {
                write!(f, "loadBalancerIP {ip} is not an address of the pool")
            }
            AssignError::Taken { ip, by } => write!(f, "loadBalancerIP {ip} is held by {by}"),
            AssignError::Exhausted => f.write_str("no free address left in the pool"),
        }
    }
}

impl std::error::Error for AssignError {}

#[derive(Debug)]
pub struct LbAddresses {
    pool: IpPool,
    held: BTreeMap<ServiceKey, Ipv4Addr>,
}

impl LbAddresses {
    pub fn new(pool: IpPool) -> Self {
        Self {
            pool,
            held: BTreeMap::new(),
        }
    }

    pub fn get(&self, key: &ServiceKey) -> Option<Ipv4Addr> {
        self.held.get(key).copied()
    }

    pub fn keys(&self) -> Vec<ServiceKey> {
        self.held.keys().cloned().collect()
    }

    /// The Service's address: the one it holds if that still fits what it
    /// requests, else the requested one, else `previous` (the address in its
    /// status, kept across a restart) when free, else any free one.
    pub fn assign(
        &mut self,
        key: &ServiceKey,
        requested: Requested,
        previous: Option<Ipv4Addr>,
    ) -> Result<Ipv4Addr, AssignError> {
        let held = self.get(key);
        match (requested, held) {
            (Requested::Any, Some(ip)) => return Ok(ip),
            (Requested::Ip(want), Some(ip)) if want == ip => return Ok(ip),
            _ => {}
        }
        self.release(key);
        let ip = match requested {
            Requested::Unusable => return Err(AssignError::NotInPool("(not IPv4)".into())),
            Requested::Ip(want) => self.take(want)?,
            Requested::Any => match previous.filter(|ip| self.pool.reserve(*ip)) {
                Some(ip) => ip,
                None => self.pool.allocate().ok_or(AssignError::Exhausted)?,
            },
        };
        self.held.insert(key.clone(), ip);
        Ok(ip)
    }

    fn take(&mut self, want: Ipv4Addr) -> Result<Ipv4Addr, AssignError> {
        if !self.pool.cidr().contains(want) {
            return Err(AssignError::NotInPool(want.to_string()));
        }
        if let Some((by, _)) = self.held.iter().find(|(_, ip)| **ip == want) {
            return Err(AssignError::Taken {
                ip: want,
                by: by.to_string(),
            });
        }
        if self.pool.reserve(want) {
            Ok(want)
        } else {
            // The network, first host or broadcast address.
            Err(AssignError::NotInPool(want.to_string()))
        }
    }

    /// Gives the Service's address back; returns it.
    pub fn release(&mut self, key: &ServiceKey) -> Option<Ipv4Addr> {
        let ip = self.held.remove(key)?;
        self.pool.release(ip);
        Some(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipam::Cidr;

    fn key(name: &str) -> ServiceKey {
        ServiceKey {
            namespace: "ns".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        }
    }

    fn addresses() -> LbAddresses {
        LbAddresses::new(IpPool::new(Cidr::parse("10.216.0.0/24").unwrap()))
    }

    fn ip(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 216, 0, last)
    }

    #[test]
    fn any_allocates_once_and_keeps_it() {
        let mut a = addresses();
        let first = a.assign(&key("a"), Requested::Any, None).unwrap();
        assert_eq!(first, ip(2));
        assert_eq!(a.assign(&key("a"), Requested::Any, None), Ok(first));
        assert_eq!(a.assign(&key("b"), Requested::Any, None), Ok(ip(3)));
    }

    #[test]
    fn honours_requested_and_previous_addresses() {
        let mut a = addresses();
        assert_eq!(
            a.assign(&key("a"), Requested::Ip(ip(250)), None),
            Ok(ip(250))
        );
        assert_eq!(a.assign(&key("b"), Requested::Any, Some(ip(9))), Ok(ip(9)));
        // A previous address someone holds is not reused.
        assert_eq!(a.assign(&key("c"), Requested::Any, Some(ip(9))), Ok(ip(2)));
    }

    #[test]
    fn refuses_requests_outside_the_pool_or_taken() {
        let mut a = addresses();
        assert_eq!(
            a.assign(
                &key("a"),
                Requested::Ip(Ipv4Addr::new(10, 215, 0, 250)),
                None
            ),
            Err(AssignError::NotInPool("10.215.0.250".into()))
        );
        assert!(matches!(
            a.assign(&key("a"), Requested::Ip(ip(1)), None),
            Err(AssignError::NotInPool(_))
        ));
        a.assign(&key("a"), Requested::Ip(ip(7)), None).unwrap();
        assert_eq!(
            a.assign(&key("b"), Requested::Ip(ip(7)), None),
            Err(AssignError::Taken {
                ip: ip(7),
                by: "ns/a".into()
            })
        );
        assert!(a.assign(&key("c"), Requested::Unusable, None).is_err());
    }

    #[test]
    fn a_changed_request_moves_the_service_and_frees_the_old_address() {
        let mut a = addresses();
        a.assign(&key("a"), Requested::Ip(ip(7)), None).unwrap();
        assert_eq!(a.assign(&key("a"), Requested::Ip(ip(8)), None), Ok(ip(8)));
        assert_eq!(a.assign(&key("b"), Requested::Ip(ip(7)), None), Ok(ip(7)));
        assert_eq!(a.release(&key("a")), Some(ip(8)));
        assert_eq!(a.get(&key("a")), None);
        assert_eq!(a.assign(&key("c"), Requested::Ip(ip(8)), None), Ok(ip(8)));
    }

    #[test]
    fn a_full_pool_is_reported() {
        let mut a = LbAddresses::new(IpPool::new(Cidr::parse("10.216.0.0/30").unwrap()));
        assert_eq!(a.assign(&key("a"), Requested::Any, None), Ok(ip(2)));
        assert_eq!(
            a.assign(&key("b"), Requested::Any, None),
            Err(AssignError::Exhausted)
        );
    }
}
