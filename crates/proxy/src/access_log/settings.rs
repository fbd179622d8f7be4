//! Which records are written and with which fields: the process-wide
//! defaults (flags) and a listener's override (ClientTrafficPolicy).

use coxswain_ir::{AccessLogPolicy, Listener};

use super::fields::FieldSet;

/// What one request's (connection's, session's) record gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogSettings {
    pub enabled: bool,
    /// The share logged, 0 to 1.
    pub sample: f64,
    pub fields: FieldSet,
}

impl LogSettings {
    /// Decides for one request: the fields of its record, or `None` when
    /// it is not logged (disabled, or not in the sampled share).
    pub fn sampled(&self) -> Option<FieldSet> {
        let logged = self.enabled
            && (self.sample >= 1.0 || (self.sample > 0.0 && rand::random::<f64>() < self.sample));
        logged.then_some(self.fields)
    }

    /// These defaults as `listener` overrides them.
    pub fn for_listener(&self, listener: Option<&ListenerTag>) -> LogSettings {
        let Some(policy) = listener.and_then(|l| l.policy.as_ref()) else {
            return *self;
        };
        LogSettings {
            enabled: self.enabled && !policy.disabled,
            sample: policy.sample.unwrap_or(self.sample),
            fields: policy.fields.unwrap_or(self.fields),
        }
    }
}

/// A listener's override, compiled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ListenerPolicy {
    pub disabled: bool,
    pub sample: Option<f64>,
    pub fields: Option<FieldSet>,
}

impl ListenerPolicy {
    pub fn compile(policy: &AccessLogPolicy) -> Self {
        ListenerPolicy {
            disabled: policy.disabled,
            sample: policy.sample_ratio.map(|r| r.clamp(0.0, 1.0)),
            fields: policy.fields.as_deref().map(FieldSet::of),
        }
    }
}

/// The listener a record names (`namespace/gateway/section`) and its
/// override of the defaults. Compiled once per config.
#[derive(Debug)]
pub struct ListenerTag {
    pub name: Box<str>,
    pub policy: Option<ListenerPolicy>,
}

impl ListenerTag {
    pub fn of(listener: &Listener) -> Self {
        ListenerTag {
            name: format!("{}/{}", listener.gateway, listener.name).into(),
            policy: listener.access_log.as_ref().map(ListenerPolicy::compile),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_ir::AccessLogField;

    fn defaults() -> LogSettings {
        LogSettings {
            enabled: true,
            sample: 1.0,
            fields: FieldSet::ALL,
        }
    }

    #[test]
    fn a_listener_policy_overrides_only_what_it_sets() {
        let tag = |policy: AccessLogPolicy| ListenerTag {
            name: "ns/gw/http".into(),
            policy: Some(ListenerPolicy::compile(&policy)),
        };
        let off = tag(AccessLogPolicy {
            disabled: true,
            ..AccessLogPolicy::default()
        });
        assert!(!defaults().for_listener(Some(&off)).enabled);
        let some = tag(AccessLogPolicy {
            sample_ratio: Some(0.25),
            fields: Some(vec![AccessLogField::Status]),
            ..AccessLogPolicy::default()
        });
        let s = defaults().for_listener(Some(&some));
        assert!(s.enabled);
        assert_eq!(s.sample, 0.25);
        assert_eq!(s.fields, FieldSet::of(&[AccessLogField::Status]));
        assert_eq!(defaults().for_listener(None), defaults());
    }

    #[test]
    fn sampling_zero_logs_nothing_and_one_logs_everything() {
        let never = LogSettings {
            sample: 0.0,
            ..defaults()
        };
        assert!((0..1000).all(|_| never.sampled().is_none()));
        assert!((0..1000).all(|_| defaults().sampled().is_some()));
        let off = LogSettings {
            enabled: false,
            ..defaults()
        };
        assert!(off.sampled().is_none());
    }
}
