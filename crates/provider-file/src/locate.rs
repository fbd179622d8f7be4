//! Finds where a value sits in a document's text, for errors that serde
//! cannot place (schema checks run on the typed object, which has no spans).

/// 1-based (line, column) in the file.
pub type Position = (usize, usize);

pub struct Locator<'a> {
    text: &'a str,
    first_line: usize,
}

impl<'a> Locator<'a> {
    pub fn new(text: &'a str, first_line: usize) -> Self {
        Locator { text, first_line }
    }

    pub fn document_start(&self) -> Position {
        (self.first_line, 1)
    }

    /// The `nth` (0-based) line mentioning `key` followed by `value`, pointing
    /// at the value. Falls back to any mention of `value`, then to the start
    /// of the document.
    pub fn find(&self, key: &str, value: &str, nth: usize) -> Position {
        let keyed = self.lines().filter_map(|(line, text)| {
            let after_key = text.find(key)? + key.len();
            let rest = text.get(after_key..)?;
            let at = rest.find(value)?;
            Some((line, after_key + at + 1))
        });
        if let Some(found) = keyed.clone().nth(nth).or_else(|| keyed.last()) {
            return found;
        }
        self.lines()
            .find_map(|(line, text)| text.find(value).map(|at| (line, at + 1)))
            .unwrap_or_else(|| self.document_start())
    }

    fn lines(&self) -> impl Iterator<Item = (usize, &'a str)> + Clone {
        let first = self.first_line;
        self.text
            .lines()
            .enumerate()
            .map(move |(i, l)| (first + i, l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_value_after_key() {
        let text =
            "\nspec:\n  listeners:\n  - name: a\n    port: 80\n  - name: a\n    port: 70000\n";
        let loc = Locator::new(text, 10);
        assert_eq!(loc.find("port:", "70000", 0), (16, 11));
        assert_eq!(loc.find("name:", "a", 1), (15, 11));
        assert_eq!(loc.find("nothing", "zzz", 0), (10, 1));
    }
}
