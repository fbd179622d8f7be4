//! Splits a file into documents, remembering where each one starts so that
//! errors inside the third document still carry the file's line numbers.

/// One YAML document: its text and the 1-based file line its text starts on.
#[derive(Debug, PartialEq, Eq)]
pub struct Document<'a> {
    pub first_line: usize,
    pub text: &'a str,
}

/// Splits multi-document YAML on `---` markers (and `...` end markers).
/// Documents holding only blank lines and comments are dropped.
pub fn split_yaml(source: &str) -> Vec<Document<'_>> {
    let mut documents = Vec::new();
    let mut start_byte = 0;
    let mut start_line = 1;
    let mut offset = 0;
    for (index, line) in source.split_inclusive('\n').enumerate() {
        let line_number = index + 1;
        let trimmed = line.trim_end();
        if is_marker(trimmed) {
            push_if_content(&mut documents, source, start_byte, offset, start_line);
            // Content may follow the marker on the same line (`--- {a: 1}`);
            // keep it by starting the next document after the marker itself.
            let marker_len = 3;
            start_byte = offset + marker_len;
            start_line = line_number;
        }
        offset += line.len();
    }
    push_if_content(&mut documents, source, start_byte, source.len(), start_line);
    documents
}

fn is_marker(line: &str) -> bool {
    let starts = |m: &str| {
        line == m
            || line
                .strip_prefix(m)
                .is_some_and(|rest| rest.starts_with([' ', '\t']))
    };
    starts("---") || starts("...")
}

fn push_if_content<'a>(
    documents: &mut Vec<Document<'a>>,
    source: &'a str,
    start: usize,
    end: usize,
    first_line: usize,
) {
    let Some(text) = source.get(start..end) else {
        return;
    };
    let has_content = text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    });
    if has_content {
        documents.push(Document { first_line, text });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_first_lines() {
        let src = "a: 1\n---\nb: 2\n# c\n---\n# only a comment\n---\nc: 3\n";
        let docs = split_yaml(src);
        let firsts: Vec<_> = docs.iter().map(|d| d.first_line).collect();
        assert_eq!(firsts, vec![1, 2, 7]);
        assert_eq!(docs[2].text.trim(), "c: 3");
    }

    #[test]
    fn leading_marker_and_inline_content() {
        let docs = split_yaml("---\nx: 1\n--- {y: 2}\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].text.trim(), "{y: 2}");
        assert_eq!(docs[1].first_line, 3);
    }
}
