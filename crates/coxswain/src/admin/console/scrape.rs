//! Reads back the admin's own Prometheus exposition, so the console shows
//! exactly the numbers Prometheus and the dashboards see.

use std::collections::BTreeMap;

/// One sample line: `name{labels} value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// Every sample in `text`; comments and lines that do not parse are skipped
/// (the text is our own rendering, so a skipped line is a bug, not input).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => return None,
    };
    let (labels, value) = match rest.strip_prefix('{') {
        Some(inner) => parse_labels(inner)?,
        None => (BTreeMap::new(), rest),
    };
    let value = value.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parses `a="x",b="y"} rest` into the labels and what follows the `}`.
fn parse_labels(mut s: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut labels = BTreeMap::new();
    loop {
        s = s.trim_start_matches(',');
        if let Some(rest) = s.strip_prefix('}') {
            return Some((labels, rest));
        }
        let (key, rest) = s.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        s = rest.get(end + 1..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_escapes_and_infinity() {
        let text = "# HELP x y\n\
                    plain 3\n\
                    h_bucket{route=\"ns/a \\\"q\\\"/0\",le=\"+Inf\"} 7\n\
                    h_bucket{route=\"r\",le=\"0.5\"} 2.5\n\
                    broken{route=\"r\n";
        let samples = parse(text);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert_eq!(samples[0].name, "plain");
        assert_eq!(samples[0].value, 3.0);
        assert_eq!(samples[1].label("route"), "ns/a \"q\"/0");
        assert_eq!(samples[1].label("le"), "+Inf");
        assert_eq!(samples[2].value, 2.5);
    }
}
