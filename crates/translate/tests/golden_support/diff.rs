//! A small line diff (longest common subsequence) printed as unified-ish
//! hunks, so golden drift shows what changed instead of two whole files.

const CONTEXT: usize = 3;

enum Line<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// `-` lines are in `expected` only, `+` lines in `actual` only.
pub fn unified(expected: &str, actual: &str) -> String {
    let lines = diff_lines(expected, actual);
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Line::Same(_)))
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut last_printed: Option<usize> = None;
    for &index in &changed {
        let start = index.saturating_sub(CONTEXT);
        let end = (index + CONTEXT + 1).min(lines.len());
        let from = match last_printed {
            Some(last) if last + 1 >= start => last + 1,
            Some(_) => {
                out.push_str("@@\n");
                start
            }
            None => {
                out.push_str("@@\n");
                start
            }
        };
        for (i, line) in lines.iter().enumerate().take(end).skip(from) {
            match line {
                Line::Same(text) => out.push_str(&format!("  {text}\n")),
                Line::Removed(text) => out.push_str(&format!("- {text}\n")),
                Line::Added(text) => out.push_str(&format!("+ {text}\n")),
            }
            last_printed = Some(i);
        }
    }
    out
}

fn diff_lines<'a>(expected: &'a str, actual: &'a str) -> Vec<Line<'a>> {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // lcs[i][j] = length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(Line::Same(a[i]));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(Line::Removed(a[i]));
            i += 1;
        } else {
            out.push(Line::Added(b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| Line::Removed(l)));
    out.extend(b[j..].iter().map(|l| Line::Added(l)));
    out
}
