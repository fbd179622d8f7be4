//! IpAccessControl: allow and deny CIDR lists.
//!
//! Unlike the user guide (which skips an invalid entry), one invalid
//! entry makes the whole resource unenforceable: its rules answer 500 and
//! its status says which entry. Skipping a `deny` entry would silently
//! admit the clients it was meant to refuse.

use coxswain_api::IpAccessControl;
use coxswain_ir::{ExtensionSpec, IpAccess, IpCidr};

use super::{Resolved, enforced_or_refused};

pub fn resolve(cr: &IpAccessControl) -> Resolved {
    enforced_or_refused(parse(cr).map(ExtensionSpec::IpAccess))
}

fn parse(cr: &IpAccessControl) -> Result<IpAccess, String> {
    let list = |field: &str, values: &[String]| {
        values
            .iter()
            .map(|v| {
                v.parse::<IpCidr>()
                    .map_err(|e| format!("spec.{field}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(IpAccess {
        allow: list("allow", &cr.spec.allow)?,
        deny: list("deny", &cr.spec.deny)?,
        xff_trusted_hops: match &cr.spec.x_forwarded_for {
            None => 0,
            Some(trust) if (1..=16).contains(&trust.trusted_hops) => trust.trusted_hops,
            Some(_) => return Err("spec.xForwardedFor.trustedHops: must be 1 to 16".into()),
        },
    })
}
