//! metav1 LabelSelector evaluation (matchLabels + matchExpressions).

use std::collections::BTreeMap;

/// One `matchExpressions` entry, borrowed from whichever generated type holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// A validated label selector. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Validates raw expressions `(key, operator, values)`; the error is a
    /// short human message for a status condition.
    pub fn parse<'a>(
        match_labels: Option<&BTreeMap<String, String>>,
        expressions: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a [String]>)>,
    ) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for (key, operator, values) in expressions {
            let values = values.unwrap_or_default().to_vec();
            let operator = match operator {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(format!("invalid selector operator {other:?}")),
            };
            let needs_values = matches!(operator, Operator::In | Operator::NotIn);
            if needs_values && values.is_empty() {
                return Err(format!(
                    "selector operator {operator:?} on {key:?} needs values"
                ));
            }
            if !needs_values && !values.is_empty() {
                return Err(format!(
                    "selector operator {operator:?} on {key:?} takes no values"
                ));
            }
            if key.is_empty() {
                return Err("selector expression has an empty key".to_string());
            }
            requirements.push(Requirement {
                key: key.to_string(),
                operator,
                values,
            });
        }
        Ok(LabelSelector {
            match_labels: match_labels.cloned().unwrap_or_default(),
            requirements,
        })
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let labels_ok = self
            .match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        labels_ok
            && self.requirements.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator {
                    Operator::In => value.is_some_and(|v| r.values.contains(v)),
                    Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                    Operator::Exists => value.is_some(),
                    Operator::DoesNotExist => value.is_none(),
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn vals(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse(None, []).unwrap();
        assert!(s.matches(&labels(&[])));
        assert!(s.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_require_every_pair() {
        let want = labels(&[("env", "prod"), ("team", "a")]);
        let s = LabelSelector::parse(Some(&want), []).unwrap();
        assert!(s.matches(&labels(&[("env", "prod"), ("team", "a"), ("x", "y")])));
        assert!(!s.matches(&labels(&[("env", "prod")])));
        assert!(!s.matches(&labels(&[("env", "dev"), ("team", "a")])));
    }

    #[test]
    fn expressions_follow_kubernetes_semantics() {
        let v = vals(&["a", "b"]);
        let exprs = [
            ("team", "In", Some(v.as_slice())),
            ("legacy", "DoesNotExist", None),
        ];
        let s = LabelSelector::parse(None, exprs).unwrap();
        assert!(s.matches(&labels(&[("team", "a")])));
        assert!(!s.matches(&labels(&[("team", "c")])));
        assert!(!s.matches(&labels(&[("team", "a"), ("legacy", "")])));

        let not_in = LabelSelector::parse(None, [("team", "NotIn", Some(v.as_slice()))]).unwrap();
        assert!(not_in.matches(&labels(&[])));
        assert!(not_in.matches(&labels(&[("team", "c")])));
        assert!(!not_in.matches(&labels(&[("team", "b")])));

        let exists = LabelSelector::parse(None, [("team", "Exists", None)]).unwrap();
        assert!(exists.matches(&labels(&[("team", "")])));
        assert!(!exists.matches(&labels(&[])));
    }

    #[test]
    fn invalid_expressions_are_rejected() {
        let v = vals(&["a"]);
        assert!(LabelSelector::parse(None, [("k", "Equals", None)]).is_err());
        assert!(LabelSelector::parse(None, [("k", "In", None)]).is_err());
        assert!(LabelSelector::parse(None, [("k", "Exists", Some(v.as_slice()))]).is_err());
        assert!(LabelSelector::parse(None, [("", "Exists", None)]).is_err());
    }
}
