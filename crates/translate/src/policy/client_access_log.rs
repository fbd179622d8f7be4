//! A ClientTrafficPolicy's `accessLog` stanza, checked and turned into the
//! IR's per-listener access-log settings.

use coxswain_api::ClientTrafficPolicy;
use coxswain_ir::{AccessLogField, AccessLogPolicy};

/// The stanza as the IR carries it; `Err` says what is wrong with it
/// (the policy is then refused as a whole).
pub fn access_log(policy: &ClientTrafficPolicy) -> Result<Option<AccessLogPolicy>, String> {
    let Some(config) = &policy.spec.access_log else {
        return Ok(None);
    };
    if let Some(ratio) = config.sample_ratio
        && !(0.0..=1.0).contains(&ratio)
    {
        return Err(format!(
            "accessLog.sampleRatio {ratio} is not between 0 and 1"
        ));
    }
    let fields = match &config.fields {
        None => None,
        Some(names) => Some(
            names
                .iter()
                .map(|name| {
                    AccessLogField::parse(name).ok_or_else(|| {
                        let known: Vec<&str> =
                            AccessLogField::ALL.iter().map(|f| f.name()).collect();
                        format!(
                            "accessLog.fields: unknown field {name:?} (fields: {})",
                            known.join(", ")
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(Some(AccessLogPolicy {
        disabled: config.disabled.unwrap_or(false),
        sample_ratio: config.sample_ratio,
        fields,
    }))
}

/// What the stanza does, for the Accepted condition's message.
pub fn describe(policy: &AccessLogPolicy) -> String {
    if policy.disabled {
        return "access log off".to_string();
    }
    let mut parts = Vec::new();
    if let Some(ratio) = policy.sample_ratio {
        parts.push(format!("sampled at {ratio}"));
    }
    if let Some(fields) = &policy.fields {
        let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
        parts.push(format!("fields {}", names.join(",")));
    }
    match parts.is_empty() {
        true => "access log as the flags say".to_string(),
        false => format!("access log {}", parts.join(", ")),
    }
}
