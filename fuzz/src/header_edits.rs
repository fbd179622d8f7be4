//! `header_edits`: a route's `RequestHeaderModifier`/`ResponseHeaderModifier`
//! as the proxy applies it, `coxswain_proxy::fuzzing::apply_header_edits`
//! (`route::HeaderEdits::compile` then `apply`), on an `arbitrary`-built
//! `HeaderModifier` and starting `HeaderMap`.
//!
//! The translator only lets lower-case RFC 9110 tokens that are not
//! hop-by-hop names, and values without control characters, into the IR.
//! The proxy must still be safe on any IR, so names and values here are
//! anything: mixed case, empty, hop-by-hop, pseudo-headers, with spaces,
//! CR/LF/NUL, non-ASCII, over http's 65535-byte name limit, or raw strings.
//!
//! The expected result comes from an independent model: a `Vec` of
//! (name, value) pairs, with validity decided by the RFC 9110 grammar
//! written out below rather than by the `http` parsers. Names are
//! ASCII-lower-cased; a name is valid when it is 1 to 65535 `tchar`s; a
//! value when every byte is HTAB, SP, VCHAR or obs-text (0x80-0xFF). An
//! entry with an invalid name or value is skipped. `set` drops every pair
//! of its name and pushes one; `add` pushes; `remove` drops every pair of
//! its name. Edits run in that order: all sets, all adds, all removes.
//!
//! Properties:
//! - never panics;
//! - the result equals the model: the same names, and for each name the
//!   same values in the same order (so also the same total count);
//! - every valid `remove` name is absent;
//! - a valid `set` name not removed has exactly the last valid value set
//!   for it, followed by the valid values `add`ed for it, in order (an
//!   `add` after a `set` of the same name appends, it does not replace);
//! - a name only `add`ed (not set, not removed) keeps its starting values,
//!   followed by the added ones;
//! - a header not named by any applied edit (edits skipped as invalid
//!   count as not applied) is untouched: same values, same order;
//! - no value in the result holds CR, LF or NUL (in fact every byte is a
//!   valid field-value byte), and every name is a lower-case token.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::{Arbitrary, Unstructured};
use coxswain_ir::{Header, HeaderModifier};
use coxswain_proxy::fuzzing::apply_header_edits;
use http::{HeaderMap, HeaderName, HeaderValue};

/// http's limit on a header name (`MAX_HEADER_NAME_LEN`); RFC 9110 has none.
const MAX_NAME_LEN: usize = (1 << 16) - 1;

/// Names an edit or a starting header may use. `LONG_OK`/`LONG_BAD` stand
/// for names at and one past the length limit.
const NAMES: &[&str] = &[
    "x-a",
    "X-A",
    "x-b",
    "X-b",
    "x-c",
    "host",
    "Host",
    "content-type",
    "set-cookie",
    "Set-Cookie",
    "x-forwarded-for",
    "connection",
    "transfer-encoding",
    "te",
    "content-length",
    "upgrade",
    ":path",
    ":authority",
    "",
    " x-a",
    "x-a ",
    "x a",
    "x-a\r\nx-b",
    "x-a\0",
    "x-a:",
    "é",
    "X-É",
    "x_a",
    "!#$%&'*+-.^_`|~",
    "a\"b",
    "(x)",
    "x/y",
    "LONG_OK",
    "LONG_BAD",
];

/// Values an edit or a starting header may use.
const VALUES: &[&str] = &[
    "1",
    "2",
    "3",
    "",
    " ",
    "a b",
    " leading",
    "trailing ",
    "\t",
    "a\tb",
    "v\r\nx-injected: 1",
    "v\r",
    "v\n",
    "v\0",
    "\x7f",
    "\x01",
    "é",
    "a,b",
    "=?utf-8?q?x?=",
];

#[derive(Arbitrary, Debug)]
enum NameSpec {
    Known(u8),
    Raw(String),
}

impl NameSpec {
    fn build(&self) -> String {
        match self {
            NameSpec::Known(i) => match NAMES[usize::from(*i) % NAMES.len()] {
                "LONG_OK" => "a".repeat(MAX_NAME_LEN),
                "LONG_BAD" => "a".repeat(MAX_NAME_LEN + 1),
                name => name.to_string(),
            },
            NameSpec::Raw(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum ValueSpec {
    Known(u8),
    Raw(String),
}

impl ValueSpec {
    fn build(&self) -> String {
        match self {
            ValueSpec::Known(i) => VALUES[usize::from(*i) % VALUES.len()].to_string(),
            ValueSpec::Raw(s) => s.clone(),
        }
    }
}

/// A starting header's value may also be bytes that are not UTF-8
/// (obs-text), as a client or upstream may send.
#[derive(Arbitrary, Debug)]
enum StartValue {
    Known(u8),
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    start: Vec<(NameSpec, StartValue)>,
    set: Vec<(NameSpec, ValueSpec)>,
    add: Vec<(NameSpec, ValueSpec)>,
    remove: Vec<NameSpec>,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The model's name: lower-cased, or `None` when it is not a token.
fn model_name(raw: &str) -> Option<String> {
    let lower = raw.to_ascii_lowercase();
    ((1..=MAX_NAME_LEN).contains(&lower.len()) && lower.bytes().all(is_tchar)).then_some(lower)
}

/// RFC 9110 field-value bytes (leading/trailing whitespace is not refused).
fn is_value_byte(b: u8) -> bool {
    b == b'\t' || b == b' ' || b.is_ascii_graphic() || b >= 0x80
}

fn model_value(raw: &str) -> Option<Vec<u8>> {
    raw.bytes()
        .all(is_value_byte)
        .then(|| raw.as_bytes().to_vec())
}

fn model_pair(h: &Header) -> Option<(String, Vec<u8>)> {
    model_name(&h.name).zip(model_value(&h.value))
}

/// The starting map: only what `http` accepts (not what is under test).
fn start_map(input: &Input) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in &input.start {
        let value = match value {
            StartValue::Known(i) => HeaderValue::from_str(VALUES[usize::from(*i) % VALUES.len()]),
            StartValue::Raw(bytes) => HeaderValue::from_bytes(bytes),
        };
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.build().as_bytes()), value) {
            map.append(name, value);
        }
    }
    map
}

/// Per name, its values in order.
fn by_name(map: &HeaderMap) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut out: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    for name in map.keys() {
        out.insert(
            name.as_str().to_string(),
            map.get_all(name)
                .iter()
                .map(|v| v.as_bytes().to_vec())
                .collect(),
        );
    }
    out
}

fn model_by_name(pairs: &[(String, Vec<u8>)]) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut out: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    for (name, value) in pairs {
        out.entry(name.clone()).or_default().push(value.clone());
    }
    out
}

/// The values `add`ed for `name`, in order.
fn added<'a>(
    add: &'a [(String, Vec<u8>)],
    name: &'a str,
) -> impl Iterator<Item = &'a Vec<u8>> + 'a {
    add.iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
}

/// Checks one modifier on one starting map.
pub fn check_edits(modifier: &HeaderModifier, start: &HeaderMap) {
    let before = by_name(start);
    let mut headers = start.clone();
    apply_header_edits(modifier, &mut headers);
    let after = by_name(&headers);
    let ctx = || format!("modifier {modifier:?}\nstart {start:?}\nresult {headers:?}");

    // The model.
    let set: Vec<(String, Vec<u8>)> = modifier.set.iter().filter_map(model_pair).collect();
    let add: Vec<(String, Vec<u8>)> = modifier.add.iter().filter_map(model_pair).collect();
    let remove: BTreeSet<String> = modifier
        .remove
        .iter()
        .filter_map(|n| model_name(n))
        .collect();
    let mut pairs: Vec<(String, Vec<u8>)> = before
        .iter()
        .flat_map(|(n, vs)| vs.iter().map(move |v| (n.clone(), v.clone())))
        .collect();
    for (name, value) in &set {
        pairs.retain(|(n, _)| n != name);
        pairs.push((name.clone(), value.clone()));
    }
    for pair in &add {
        pairs.push(pair.clone());
    }
    pairs.retain(|(n, _)| !remove.contains(n));
    let expected = model_by_name(&pairs);

    assert_eq!(after, expected, "result differs from the model: {}", ctx());
    assert_eq!(headers.len(), pairs.len(), "value count: {}", ctx());
    assert_eq!(headers.keys_len(), expected.len(), "name count: {}", ctx());

    // The same, property by property.
    for name in &remove {
        assert!(
            !after.contains_key(name),
            "removed {name:?} present: {}",
            ctx()
        );
    }
    let set_names: BTreeSet<&String> = set.iter().map(|(n, _)| n).collect();
    let add_names: BTreeSet<&String> = add.iter().map(|(n, _)| n).collect();
    for name in set_names.iter().copied().filter(|n| !remove.contains(*n)) {
        let last = set.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
        let want: Vec<&Vec<u8>> = last.into_iter().chain(added(&add, name)).collect();
        let got: Vec<&Vec<u8>> = after.get(name).into_iter().flatten().collect();
        assert_eq!(got, want, "set {name:?}: {}", ctx());
    }
    for name in add_names
        .iter()
        .copied()
        .filter(|n| !remove.contains(*n) && !set_names.contains(n))
    {
        let want: Vec<&Vec<u8>> = before
            .get(name)
            .into_iter()
            .flatten()
            .chain(added(&add, name))
            .collect();
        let got: Vec<&Vec<u8>> = after.get(name).into_iter().flatten().collect();
        assert_eq!(got, want, "add {name:?}: {}", ctx());
    }
    for (name, values) in &before {
        if !remove.contains(name) && !set_names.contains(name) && !add_names.contains(name) {
            assert_eq!(
                after.get(name),
                Some(values),
                "untouched {name:?}: {}",
                ctx()
            );
        }
    }
    for (name, values) in &after {
        assert!(
            name.bytes().all(|b| is_tchar(b) && !b.is_ascii_uppercase()),
            "name {name:?} is not a lower-case token: {}",
            ctx()
        );
        for value in values {
            assert!(
                !value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)),
                "CR, LF or NUL in {name:?}: {}",
                ctx()
            );
            assert!(
                value.iter().copied().all(is_value_byte),
                "control byte in {name:?}: {}",
                ctx()
            );
        }
    }
}

/// The fuzz entry point.
pub fn check(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let header = |(n, v): &(NameSpec, ValueSpec)| Header {
        name: n.build(),
        value: v.build(),
    };
    let modifier = HeaderModifier {
        set: input.set.iter().map(header).collect(),
        add: input.add.iter().map(header).collect(),
        remove: input.remove.iter().map(NameSpec::build).collect(),
    };
    check_edits(&modifier, &start_map(&input));
}

/// Hand-written cases run through the same check, so the replay covers
/// them whatever the random seeds decode to, and the concrete results the
/// model must agree with.
#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, value: &str) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }

    fn start() -> HeaderMap {
        let mut map = HeaderMap::new();
        for (n, v) in [
            ("x-a", "old1"),
            ("x-a", "old2"),
            ("x-b", "b"),
            ("x-keep", "k"),
        ] {
            map.append(n, HeaderValue::from_static(v));
        }
        map
    }

    fn run(modifier: HeaderModifier) -> BTreeMap<String, Vec<Vec<u8>>> {
        check_edits(&modifier, &start());
        let mut headers = start();
        apply_header_edits(&modifier, &mut headers);
        by_name(&headers)
    }

    fn values(map: &BTreeMap<String, Vec<Vec<u8>>>, name: &str) -> Vec<String> {
        map.get(name)
            .into_iter()
            .flatten()
            .map(|v| String::from_utf8(v.clone()).unwrap())
            .collect()
    }

    #[test]
    fn set_then_add_appends_and_last_set_wins() {
        let out = run(HeaderModifier {
            set: vec![h("X-A", "s1"), h("x-a", "s2")],
            add: vec![h("x-a", "a1"), h("X-A", "a2"), h("x-b", "b2")],
            remove: vec![],
        });
        assert_eq!(values(&out, "x-a"), ["s2", "a1", "a2"]);
        assert_eq!(values(&out, "x-b"), ["b", "b2"]);
        assert_eq!(values(&out, "x-keep"), ["k"]);
    }

    #[test]
    fn remove_runs_last() {
        let out = run(HeaderModifier {
            set: vec![h("x-a", "s")],
            add: vec![h("x-c", "c")],
            remove: vec!["X-A".into(), "x-c".into(), "x-missing".into()],
        });
        assert_eq!(out.keys().collect::<Vec<_>>(), ["x-b", "x-keep"]);
    }

    #[test]
    fn invalid_entries_are_skipped() {
        let out = run(HeaderModifier {
            set: vec![
                h("x-a", "v\r\nx-injected: 1"),
                h("x-b", "nul\0"),
                h("bad name", "1"),
                h("", "1"),
                h(":path", "/x"),
            ],
            add: vec![h("x-keep", "lf\n"), h("x-é", "1")],
            remove: vec!["x b".into(), "".into(), "x-keep\r\n".into()],
        });
        assert_eq!(out, by_name(&start()));
    }

    #[test]
    fn name_length_limit() {
        let ok = "a".repeat(MAX_NAME_LEN);
        let bad = "a".repeat(MAX_NAME_LEN + 1);
        let out = run(HeaderModifier {
            set: vec![h(&ok, "1"), h(&bad, "2")],
            add: vec![],
            remove: vec![],
        });
        assert_eq!(values(&out, &ok), ["1"]);
        assert!(!out.contains_key(&bad));
    }
}
