//! What `coxswain migrate` could not carry over exactly, per Ingress: each
//! finding names the field or annotation and says why. A `Lost` finding
//! means the Gateway API objects behave differently from the Ingress (or
//! something is missing); a `Note` is worth knowing but changes nothing.

use std::collections::BTreeMap;
use std::fmt;

use coxswain_api::ObjectKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Served the same way; said so the reader is not surprised.
    Note,
    /// Not mapped, or mapped with different behaviour.
    Lost,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// The field or annotation concerned: `rules[0].host`, an annotation name.
    pub at: String,
    pub why: String,
}

/// Findings grouped by Ingress (namespace/name order), plus those about
/// the input as a whole.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub ingresses: BTreeMap<ObjectKey, Vec<Finding>>,
    pub general: Vec<Finding>,
}

impl Report {
    pub fn lost(&mut self, ingress: &ObjectKey, at: impl Into<String>, why: impl Into<String>) {
        self.push(ingress, Severity::Lost, at.into(), why.into());
    }

    pub fn note(&mut self, ingress: &ObjectKey, at: impl Into<String>, why: impl Into<String>) {
        self.push(ingress, Severity::Note, at.into(), why.into());
    }

    fn push(&mut self, ingress: &ObjectKey, severity: Severity, at: String, why: String) {
        let finding = Finding { severity, at, why };
        let found = self.ingresses.entry(ingress.clone()).or_default();
        if !found.contains(&finding) {
            found.push(finding);
        }
    }

    /// A finding about the input as a whole (IngressClasses...).
    pub fn general(&mut self, severity: Severity, at: impl Into<String>, why: impl Into<String>) {
        self.general.push(Finding {
            severity,
            at: at.into(),
            why: why.into(),
        });
    }

    /// Every Ingress that was read, so that ones with nothing to say are
    /// listed as mapped.
    pub fn touch(&mut self, ingress: &ObjectKey) {
        self.ingresses.entry(ingress.clone()).or_default();
    }

    /// True when something did not map exactly (the non-zero exit status).
    pub fn anything_lost(&self) -> bool {
        self.general
            .iter()
            .chain(self.ingresses.values().flatten())
            .any(|f| f.severity == Severity::Lost)
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Lost => "not mapped",
        })
    }
}

impl fmt::Display for Report {
    /// One block per Ingress, `Ingress ns/name: mapped` when it has no
    /// finding; the last line counts what was not mapped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.general {
            writeln!(f, "{}: {}: {}", finding.severity, finding.at, finding.why)?;
        }
        let mut lost_ingresses = 0;
        for (key, findings) in &self.ingresses {
            let lost = findings
                .iter()
                .filter(|x| x.severity == Severity::Lost)
                .count();
            if lost > 0 {
                lost_ingresses += 1;
            }
            let summary = match lost {
                0 => "mapped".to_string(),
                n => format!("{n} thing(s) not mapped"),
            };
            writeln!(f, "Ingress {key}: {summary}")?;
            for finding in findings {
                writeln!(
                    f,
                    "  - {}: {}: {}",
                    finding.severity, finding.at, finding.why
                )?;
            }
        }
        writeln!(
            f,
            "{} Ingress(es) read, {lost_ingresses} with something not mapped",
            self.ingresses.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_ingress_and_counts_what_was_lost() {
        let mut report = Report::default();
        let (a, b) = (ObjectKey::new("default", "a"), ObjectKey::new("shop", "b"));
        report.touch(&a);
        report.note(&b, "rules[0].http.paths[1]", "shadowed");
        report.lost(&b, "nginx.ingress.kubernetes.io/x", "no equivalent");
        report.lost(&b, "nginx.ingress.kubernetes.io/x", "no equivalent");
        assert!(report.anything_lost());
        assert_eq!(
            report.to_string(),
            "Ingress default/a: mapped\n\
             Ingress shop/b: 1 thing(s) not mapped\n  \
             - note: rules[0].http.paths[1]: shadowed\n  \
             - not mapped: nginx.ingress.kubernetes.io/x: no equivalent\n\
             2 Ingress(es) read, 1 with something not mapped\n"
        );
    }

    #[test]
    fn notes_alone_are_not_lost() {
        let mut report = Report::default();
        report.note(&ObjectKey::new("default", "a"), "tls[0]", "fine");
        assert!(!report.anything_lost());
    }
}
