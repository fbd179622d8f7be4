//! Why an annotation does not do what it says.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnnotationProblem {
    /// Under one of our prefixes, but not an annotation Coxswain
    /// implements: it has no effect.
    Unsupported { name: String },
    /// The value does not parse (or contradicts another annotation).
    Invalid {
        name: String,
        value: String,
        why: String,
    },
    /// Recognised but not implemented the way it asks (e.g. an nginx
    /// mechanism Coxswain has no equivalent of).
    Refused {
        name: String,
        value: String,
        why: String,
    },
    /// Both prefixes set one feature differently: the Coxswain value wins.
    Conflict {
        coxswain: String,
        coxswain_value: String,
        nginx: String,
        nginx_value: String,
    },
}

impl fmt::Display for AnnotationProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnnotationProblem::Unsupported { name } => {
                write!(f, "annotation {name} is not supported and has no effect")
            }
            AnnotationProblem::Invalid { name, value, why } => {
                write!(f, "annotation {name}: {value:?} is invalid: {why}")
            }
            AnnotationProblem::Refused { name, value, why } => {
                write!(f, "annotation {name}: {value:?} is refused: {why}")
            }
            AnnotationProblem::Conflict {
                coxswain,
                coxswain_value,
                nginx,
                nginx_value,
            } => write!(
                f,
                "annotations {coxswain} ({coxswain_value:?}) and {nginx} ({nginx_value:?}) disagree; {coxswain} is used"
            ),
        }
    }
}

impl std::error::Error for AnnotationProblem {}
