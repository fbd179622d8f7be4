//! PathRewriteRegex: the pattern must compile within the IR's regex size
//! bound, and the substitution may name only groups the pattern has. A
//! resource that fails either is not served at all (its rules answer
//! 500): sending requests on to paths nobody configured is worse than
//! refusing them.

use coxswain_api::PathRewriteRegex;
use coxswain_ir::{ExtensionSpec, MAX_REGEX_SIZE};

use super::{Resolved, enforced_or_refused};

pub fn resolve(cr: &PathRewriteRegex) -> Resolved {
    let checked = check(&cr.spec.pattern, &cr.spec.substitution);
    enforced_or_refused(checked.map(|()| ExtensionSpec::PathRewrite {
        pattern: cr.spec.pattern.clone(),
        substitution: cr.spec.substitution.clone(),
    }))
}

pub fn check(pattern: &str, substitution: &str) -> Result<(), String> {
    let regex = regex::RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_SIZE)
        .build()
        .map_err(|e| format!("spec.pattern: {e}"))?;
    for group in referenced_groups(substitution) {
        let known = match group.parse::<usize>() {
            Ok(index) => index < regex.captures_len(),
            Err(_) => regex.capture_names().flatten().any(|n| n == group),
        };
        if !known {
            return Err(format!(
                "spec.substitution: ${group} names no capture group of the pattern"
            ));
        }
    }
    Ok(())
}

/// The group names and numbers a substitution refers to (`$1`, `${name}`;
/// `$$` is a literal `$`).
fn referenced_groups(substitution: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = substitution;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            rest = after;
        } else if let Some(braced) = rest.strip_prefix('{') {
            let end = braced.find('}').unwrap_or(braced.len());
            out.push(&braced[..end]);
            rest = braced.get(end + 1..).unwrap_or("");
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end > 0 {
                out.push(&rest[..end]);
            }
            rest = &rest[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutions_may_name_only_groups_the_pattern_has() {
        assert_eq!(check("^/api/v(\\d+)/(.*)$", "/v$1/$2"), Ok(()));
        assert_eq!(check("^/(?P<rest>.*)$", "/x/${rest}$$"), Ok(()));
        assert!(check("^/(a)$", "/$2").is_err());
        assert!(check("^/(a)$", "/${name}").is_err());
        assert!(check("(", "/").is_err(), "the pattern must compile");
        assert!(check("\\w{1000}{1000}", "/").is_err(), "bounded size");
    }

    #[test]
    fn group_references_are_found_as_the_regex_crate_reads_them() {
        assert_eq!(
            referenced_groups("/$1/${two}/$$/$name-x"),
            ["1", "two", "name"]
        );
        assert!(referenced_groups("/plain/$$").is_empty());
    }
}
