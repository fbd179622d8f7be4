//! Turns one file's text into typed objects, or located errors.

use std::path::Path;

use coxswain_api::{ApiObject, Kind, KindVisitor, Object};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::LoadError;
use crate::documents::{Document, split_yaml};
use crate::kinds::{Recognised, recognise};
use crate::locate::Locator;
use crate::validate::validate;

/// One object read from a file, with the file line its document starts on.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub object: Object,
    pub line: usize,
}

#[derive(Deserialize)]
struct TypeMeta {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct ListItems<V> {
    #[serde(default)]
    items: Vec<V>,
}

/// Where a document's text comes from, so errors can be placed in the file.
enum Source<'a> {
    /// YAML text starting at `first_line` of the file.
    Yaml(&'a str, usize),
    /// A whole JSON file.
    Json(&'a str),
    /// An item of a `List`: no positions of its own; errors point at `line`.
    YamlValue(serde_yaml_ng::Value, usize),
    JsonValue(serde_json::Value, usize),
}

/// Parses every document of a file. Any error fails the whole file, so the
/// caller can keep serving the file's previous version.
pub fn parse_file(path: &Path, text: &str) -> Result<Vec<Parsed>, Vec<LoadError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if is_json {
        parse_source(path, Source::Json(text), text, &mut out, &mut errors);
    } else {
        for Document {
            first_line,
            text: doc,
        } in split_yaml(text)
        {
            parse_source(
                path,
                Source::Yaml(doc, first_line),
                doc,
                &mut out,
                &mut errors,
            );
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn parse_source(
    path: &Path,
    source: Source<'_>,
    doc_text: &str,
    out: &mut Vec<Parsed>,
    errors: &mut Vec<LoadError>,
) {
    let first_line = source.first_line();
    let err = |line, column, message: String| LoadError::new(path, line, column, message);
    let type_meta: TypeMeta = match source.decode() {
        Ok(t) => t,
        Err((line, column, message)) => return errors.push(err(line, column, message)),
    };
    let (Some(api_version), Some(kind)) = (type_meta.api_version, type_meta.kind) else {
        return errors.push(err(
            first_line,
            1,
            "document has no apiVersion or kind".into(),
        ));
    };
    match recognise(&api_version, &kind) {
        Recognised::Unknown => {
            tracing::warn!(path = %path.display(), line = first_line, %api_version, %kind, "skipping unsupported kind");
        }
        Recognised::List => match source.list_items() {
            Ok(items) => {
                for item in items {
                    parse_source(path, item, doc_text, out, errors);
                }
            }
            Err((line, column, message)) => errors.push(err(line, column, message)),
        },
        Recognised::Load(kind) => match decode_object(kind, &source) {
            Ok(mut object) => {
                let locator = Locator::new(doc_text, first_line);
                let problems = normalise(kind, &mut object)
                    .into_iter()
                    .map(|m| (locator.document_start(), m))
                    .chain(validate(&object, &locator));
                let mut ok = true;
                for ((line, column), message) in problems {
                    ok = false;
                    errors.push(err(line, column, message));
                }
                if ok {
                    coxswain_api::compact(&mut object);
                    out.push(Parsed {
                        object,
                        line: first_line,
                    });
                }
            }
            Err((line, column, message)) => errors.push(err(line, column, message)),
        },
    }
}

fn decode_object(kind: Kind, source: &Source<'_>) -> Result<Object, (usize, usize, String)> {
    struct Decode<'a, 'b>(&'a Source<'b>);
    impl KindVisitor for Decode<'_, '_> {
        type Output = Result<Object, (usize, usize, String)>;
        fn visit<T: ApiObject>(self, _: Kind, wrap: fn(T) -> Object) -> Self::Output {
            self.0.decode::<T>().map(wrap)
        }
    }
    kind.visit(Decode(source))
}

/// Defaults the namespace and insists on a name. Returns problems found.
fn normalise(kind: Kind, object: &mut Object) -> Option<String> {
    let meta = object.meta_mut()?;
    if meta.name.as_deref().unwrap_or_default().is_empty() {
        return Some(format!("{kind:?} has no metadata.name"));
    }
    if kind.cluster_scoped() {
        meta.namespace = None;
    } else if meta.namespace.as_deref().unwrap_or_default().is_empty() {
        meta.namespace = Some("default".to_string());
    }
    None
}

impl Source<'_> {
    fn first_line(&self) -> usize {
        match self {
            Source::Yaml(_, line) | Source::YamlValue(_, line) | Source::JsonValue(_, line) => {
                *line
            }
            Source::Json(_) => 1,
        }
    }

    fn decode<T: DeserializeOwned>(&self) -> Result<T, (usize, usize, String)> {
        match self {
            Source::Yaml(text, first_line) => {
                serde_yaml_ng::from_str(text).map_err(|e| yaml_error(&e, *first_line))
            }
            Source::Json(text) => {
                // serde_json counts columns from 0 at a line start; ours are 1-based.
                serde_json::from_str(text)
                    .map_err(|e| (e.line(), e.column().max(1), json_message(&e)))
            }
            Source::YamlValue(value, line) => serde_yaml_ng::from_value(value.clone())
                .map_err(|e| (*line, 1, strip_location(&e.to_string()))),
            Source::JsonValue(value, line) => {
                serde_json::from_value(value.clone()).map_err(|e| (*line, 1, json_message(&e)))
            }
        }
    }

    fn list_items(&self) -> Result<Vec<Source<'static>>, (usize, usize, String)> {
        let line = self.first_line();
        Ok(match self {
            Source::Yaml(..) | Source::YamlValue(..) => self
                .decode::<ListItems<serde_yaml_ng::Value>>()?
                .items
                .into_iter()
                .map(|v| Source::YamlValue(v, line))
                .collect(),
            Source::Json(..) | Source::JsonValue(..) => self
                .decode::<ListItems<serde_json::Value>>()?
                .items
                .into_iter()
                .map(|v| Source::JsonValue(v, line))
                .collect(),
        })
    }
}

fn yaml_error(e: &serde_yaml_ng::Error, first_line: usize) -> (usize, usize, String) {
    let (line, column) = e
        .location()
        .map(|l| (first_line + l.line().saturating_sub(1), l.column()))
        .unwrap_or((first_line, 1));
    (line, column, strip_location(&e.to_string()))
}

/// Both serde_yaml_ng and serde_json append " at line L column C"; we print
/// the position ourselves (in file coordinates), so drop theirs.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message.get(..i).unwrap_or(message).to_string(),
        None => message.to_string(),
    }
}

fn json_message(e: &serde_json::Error) -> String {
    strip_location(&e.to_string())
}
