//! Gateway `spec.addresses`: the IPs its listeners bind.

use std::net::IpAddr;

use coxswain_api::gw::gateways::GatewayAddresses;

/// Resolves the bind addresses (sorted, deduplicated), or explains why the
/// requested addresses cannot be used.
pub fn bind_addresses(
    requested: Option<&[GatewayAddresses]>,
    default_address: IpAddr,
) -> Result<Vec<IpAddr>, String> {
    let requested = requested.unwrap_or_default();
    if requested.is_empty() {
        return Ok(vec![default_address]);
    }
    let mut out = Vec::new();
    for address in requested {
        let kind = address.r#type.as_deref().unwrap_or("IPAddress");
        if kind != "IPAddress" {
            return Err(format!(
                "address type {kind:?} is not supported; only IPAddress is"
            ));
        }
        let value = address.value.as_deref().unwrap_or_default();
        if value.is_empty() {
            out.push(default_address);
            continue;
        }
        match value.parse::<IpAddr>() {
            Ok(ip) => out.push(ip),
            Err(_) => return Err(format!("{value:?} is not a valid IP address")),
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(kind: Option<&str>, value: Option<&str>) -> GatewayAddresses {
        GatewayAddresses {
            r#type: kind.map(Into::into),
            value: value.map(Into::into),
        }
    }

    const DEFAULT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(0, 0, 0, 0));

    #[test]
    fn no_addresses_bind_the_default() {
        assert_eq!(bind_addresses(None, DEFAULT), Ok(vec![DEFAULT]));
    }

    #[test]
    fn ip_addresses_are_bound_and_empty_means_default() {
        let req = [
            addr(None, Some("127.0.0.2")),
            addr(Some("IPAddress"), Some("")),
        ];
        let got = bind_addresses(Some(&req), DEFAULT).unwrap();
        assert_eq!(got, vec![DEFAULT, "127.0.0.2".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn hostnames_and_garbage_are_unsupported() {
        let host = [addr(Some("Hostname"), Some("example.com"))];
        assert!(bind_addresses(Some(&host), DEFAULT).is_err());
        let junk = [addr(Some("IPAddress"), Some("1.2.3"))];
        assert!(bind_addresses(Some(&junk), DEFAULT).is_err());
    }
}
