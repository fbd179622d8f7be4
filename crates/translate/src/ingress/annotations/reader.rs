//! Reads annotations by feature: the Coxswain spelling first, the nginx
//! one as a fallback, a conflict reported when both are set differently.
//! Whatever under either prefix was never read is reported at the end.

use std::collections::{BTreeMap, BTreeSet};

use super::problem::AnnotationProblem;
use super::{COXSWAIN_PREFIX, NGINX_PREFIX};

/// The outcome of reading one setting.
pub enum Read<T> {
    Unset,
    Valid(T),
    /// Set but not usable (already reported).
    Invalid,
}

pub struct Reader<'a> {
    map: &'a BTreeMap<String, String>,
    read: BTreeSet<String>,
    pub problems: Vec<AnnotationProblem>,
}

impl<'a> Reader<'a> {
    pub fn new(map: &'a BTreeMap<String, String>) -> Self {
        Reader {
            map,
            read: BTreeSet::new(),
            problems: Vec::new(),
        }
    }

    /// The raw value of one full annotation name, marked as read.
    pub fn raw(&mut self, key: &str) -> Option<&'a str> {
        let value = self.map.get(key)?;
        self.read.insert(key.to_string());
        Some(value.as_str())
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn coxswain(&mut self, name: &str) -> Option<&'a str> {
        self.raw(&format!("{COXSWAIN_PREFIX}{name}"))
    }

    pub fn nginx(&mut self, name: &str) -> Option<&'a str> {
        self.raw(&format!("{NGINX_PREFIX}{name}"))
    }

    /// The full name under which a setting is set: the Coxswain spelling
    /// when present, else the nginx one (the Coxswain one when neither).
    pub fn key_of(&self, name: &str, nginx: Option<&str>) -> String {
        let ours = format!("{COXSWAIN_PREFIX}{name}");
        match nginx.map(|n| format!("{NGINX_PREFIX}{n}")) {
            Some(theirs) if !self.map.contains_key(&ours) && self.map.contains_key(&theirs) => {
                theirs
            }
            _ => ours,
        }
    }

    pub fn invalid(&mut self, key: String, value: &str, why: impl Into<String>) {
        self.problems.push(AnnotationProblem::Invalid {
            name: key,
            value: value.to_string(),
            why: why.into(),
        });
    }

    /// One setting spelled `name` under the Coxswain prefix and `nginx`
    /// under the nginx one (`None`: nginx has no such annotation), both
    /// parsed by `parse`.
    pub fn setting<T: PartialEq>(
        &mut self,
        name: &str,
        nginx: Option<&str>,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Read<T> {
        let ours = self.coxswain(name).map(|v| (v, parse(v)));
        let theirs = nginx.and_then(|n| self.nginx(n).map(|v| (n, v, parse(v))));
        self.pick(name, ours, theirs)
    }

    /// The winner of a Coxswain value and an nginx one already parsed,
    /// reporting an invalid winner and a disagreement.
    pub fn pick<T: PartialEq>(
        &mut self,
        name: &str,
        ours: Option<(&str, Result<T, String>)>,
        theirs: Option<(&str, &str, Result<T, String>)>,
    ) -> Read<T> {
        let ours_key = format!("{COXSWAIN_PREFIX}{name}");
        match (ours, theirs) {
            (None, None) => Read::Unset,
            (Some((value, parsed)), other) => {
                if let Some((nginx, nginx_value, nginx_parsed)) = &other {
                    let same = match (&parsed, nginx_parsed) {
                        (Ok(a), Ok(b)) => a == b,
                        _ => false,
                    };
                    if !same {
                        self.problems.push(AnnotationProblem::Conflict {
                            coxswain: ours_key.clone(),
                            coxswain_value: value.to_string(),
                            nginx: format!("{NGINX_PREFIX}{nginx}"),
                            nginx_value: nginx_value.to_string(),
                        });
                    }
                }
                self.judge(ours_key, value, parsed)
            }
            (None, Some((nginx, value, parsed))) => {
                self.judge(format!("{NGINX_PREFIX}{nginx}"), value, parsed)
            }
        }
    }

    fn judge<T>(&mut self, key: String, value: &str, parsed: Result<T, String>) -> Read<T> {
        match parsed {
            Ok(v) => Read::Valid(v),
            Err(why) => {
                self.invalid(key, value, why);
                Read::Invalid
            }
        }
    }

    /// The annotations under our prefixes no setting has read, with the
    /// name after the prefix.
    pub fn unread(&self) -> Vec<(String, String)> {
        self.map
            .keys()
            .filter(|k| !self.read.contains(*k))
            .filter_map(|k| {
                let name = k
                    .strip_prefix(COXSWAIN_PREFIX)
                    .or_else(|| k.strip_prefix(NGINX_PREFIX))?;
                Some((k.clone(), name.to_string()))
            })
            .collect()
    }

    /// Every problem, with the annotations under our prefixes that no
    /// setting read reported as unsupported.
    pub fn finish(mut self) -> Vec<AnnotationProblem> {
        for key in self.map.keys() {
            let ours = key.starts_with(COXSWAIN_PREFIX) || key.starts_with(NGINX_PREFIX);
            if ours && !self.read.contains(key) {
                self.problems
                    .push(AnnotationProblem::Unsupported { name: key.clone() });
            }
        }
        self.problems
    }
}

/// `"true"` or `"false"` (as ingress-nginx reads them).
pub fn boolean(value: &str) -> Result<bool, String> {
    match value {
        "true" | "True" | "TRUE" => Ok(true),
        "false" | "False" | "FALSE" => Ok(false),
        _ => Err("not \"true\" or \"false\"".into()),
    }
}

/// A comma-separated list, items trimmed, empty items dropped.
pub fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A name of an object in the Ingress's namespace (a DNS subdomain).
pub fn object_name(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 253
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && value
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && value
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(value.to_string())
    } else {
        Err("not the name of an object in the Ingress's namespace".into())
    }
}
