//! `--gateway-address-pool`: every Gateway gets its own address from a CIDR,
//! deterministically. Pure: no I/O, so allocation is unit-tested directly.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use coxswain_api::ObjectKey;
use coxswain_translate::AssignedAddresses;

/// A CIDR block such as `10.0.0.0/24` or `fd00::/120`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressPool {
    base: u128,
    prefix: u8,
    v6: bool,
}

impl FromStr for AddressPool {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (ip, prefix) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (want ADDRESS/PREFIX)"))?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| format!("{ip:?} is not an IP address"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("{prefix:?} is not a prefix length"))?;
        let (bits, v6) = match ip {
            IpAddr::V4(_) => (32, false),
            IpAddr::V6(_) => (128, true),
        };
        if prefix > bits {
            return Err(format!("prefix /{prefix} is longer than {bits} bits"));
        }
        let base = to_u128(ip) & !host_mask(bits, prefix);
        Ok(AddressPool { base, prefix, v6 })
    }
}

impl fmt::Display for AddressPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.ip(self.base), self.prefix)
    }
}

fn host_mask(bits: u8, prefix: u8) -> u128 {
    let host_bits = u32::from(bits - prefix);
    if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl AddressPool {
    fn bits(&self) -> u8 {
        if self.v6 { 128 } else { 32 }
    }

    fn ip(&self, value: u128) -> IpAddr {
        if self.v6 {
            IpAddr::V6(value.into())
        } else {
            // Values come from a v4 pool, so they fit in 32 bits.
            IpAddr::V4(u32::try_from(value).unwrap_or(u32::MAX).into())
        }
    }

    /// Usable host range: IPv4 skips the network and broadcast addresses,
    /// IPv6 the subnet-router anycast address, except in tiny blocks.
    fn range(&self) -> (u128, u128) {
        let last = self.base | host_mask(self.bits(), self.prefix);
        let tiny = self.bits() - self.prefix <= 1;
        match (tiny, self.v6) {
            (true, _) => (self.base, last),
            (false, false) => (self.base + 1, last - 1),
            (false, true) => (self.base + 1, last),
        }
    }

    /// Is `ip` a usable address of this pool?
    pub fn contains(&self, ip: IpAddr) -> bool {
        if ip.is_ipv6() != self.v6 {
            return false;
        }
        let (first, last) = self.range();
        (first..=last).contains(&to_u128(ip))
    }

    fn lowest_free(&self, taken: &BTreeSet<IpAddr>) -> Option<IpAddr> {
        let (first, last) = self.range();
        let mut value = first;
        // Skip taken addresses; at most `taken.len() + 1` steps.
        while value <= last {
            let ip = self.ip(value);
            if !taken.contains(&ip) {
                return Some(ip);
            }
            value = value.checked_add(1)?;
        }
        None
    }
}

/// What one Gateway asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressRequest {
    /// IPAddress values from `spec.addresses` (unparsable values are left to
    /// the translator, which reports them).
    pub explicit: Vec<IpAddr>,
    /// Wants an address picked for it: no `spec.addresses`, or an entry
    /// with an empty value.
    pub wants_any: bool,
    /// Addresses in the Gateway's current `status.addresses`, kept if free
    /// so assignments survive restarts.
    pub current: Vec<IpAddr>,
}

/// Assigns addresses to every Gateway: first explicit requests (in key
/// order: the first Gateway asking for an address gets it), then current
/// addresses that are still free, then the lowest free address.
pub fn allocate(
    pool: &AddressPool,
    requests: &BTreeMap<ObjectKey, AddressRequest>,
) -> BTreeMap<ObjectKey, AssignedAddresses> {
    let mut taken: BTreeMap<IpAddr, ObjectKey> = BTreeMap::new();
    let mut result: BTreeMap<ObjectKey, AssignedAddresses> = BTreeMap::new();
    for (key, request) in requests {
        let mut got = Vec::new();
        let mut error = None;
        for ip in &request.explicit {
            if !pool.contains(*ip) {
                error = Some(format!("{ip} is outside the address pool {pool}"));
            } else if let Some(owner) = taken.get(ip).filter(|owner| *owner != key) {
                error = Some(format!("{ip} is already used by Gateway {owner}"));
            } else {
                taken.insert(*ip, key.clone());
                got.push(*ip);
            }
        }
        let entry = match error {
            Some(why) => Err(why),
            None => Ok(got),
        };
        result.insert(key.clone(), entry);
    }
    let wanting: Vec<&ObjectKey> = requests
        .iter()
        .filter(|(key, r)| r.wants_any && matches!(result.get(*key), Some(Ok(_))))
        .map(|(key, _)| key)
        .collect();
    let mut still_wanting = Vec::new();
    for key in wanting {
        let current = requests
            .get(key)
            .into_iter()
            .flat_map(|r| r.current.iter())
            .find(|ip| pool.contains(**ip) && !taken.contains_key(ip));
        match (current, result.get_mut(key)) {
            (Some(ip), Some(Ok(got))) => {
                taken.insert(*ip, key.clone());
                got.push(*ip);
            }
            _ => still_wanting.push(key),
        }
    }
    for key in still_wanting {
        let free: BTreeSet<IpAddr> = taken.keys().copied().collect();
        let pick = pool.lowest_free(&free);
        if let Some(ip) = pick {
            taken.insert(ip, key.clone());
        }
        if let Some(entry) = result.get_mut(key) {
            match (pick, entry) {
                (Some(ip), Ok(got)) => got.push(ip),
                (None, entry) => *entry = Err(format!("address pool {pool} is exhausted")),
                _ => {}
            }
        }
    }
    for got in result.values_mut().flatten() {
        got.sort();
        got.dedup();
    }
    result
}

#[cfg(test)]
#[path = "address_pool_tests.rs"]
mod tests;
