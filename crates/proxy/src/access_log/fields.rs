//! A set of access-log fields, as one bit per [`AccessLogField`].

use coxswain_ir::AccessLogField;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSet(u32);

impl FieldSet {
    /// Every field.
    pub const ALL: FieldSet = FieldSet((1 << AccessLogField::ALL.len()) - 1);

    pub fn of(fields: &[AccessLogField]) -> FieldSet {
        FieldSet(fields.iter().fold(0, |bits, f| bits | (1 << f.index())))
    }

    pub fn has(self, field: AccessLogField) -> bool {
        self.0 & (1 << field.index()) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_it_was_made_of() {
        let set = FieldSet::of(&[AccessLogField::Status, AccessLogField::AnsweredBy]);
        assert!(set.has(AccessLogField::Status));
        assert!(set.has(AccessLogField::AnsweredBy));
        assert!(!set.has(AccessLogField::Time));
        assert!(
            AccessLogField::ALL
                .into_iter()
                .all(|f| FieldSet::ALL.has(f))
        );
    }
}
