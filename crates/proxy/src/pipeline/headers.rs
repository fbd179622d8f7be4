//! RequestHeaderModifier and ResponseHeaderModifier: header edits with
//! names and values validated once, when the route is compiled.

use coxswain_ir::HeaderModifier;
use http::{HeaderName, HeaderValue};

/// Header edits with names and values already validated.
#[derive(Debug, Default)]
pub struct HeaderEdits {
    pub set: Vec<(HeaderName, HeaderValue)>,
    pub add: Vec<(HeaderName, HeaderValue)>,
    pub remove: Vec<HeaderName>,
}

impl HeaderEdits {
    pub fn compile(m: &HeaderModifier) -> Self {
        let pair = |h: &coxswain_ir::Header| {
            let parsed = HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes())
                .ok()
                .zip(HeaderValue::from_str(&h.value).ok());
            if parsed.is_none() {
                tracing::warn!(name = %h.name, "invalid header edit skipped");
            }
            parsed
        };
        HeaderEdits {
            set: m.set.iter().filter_map(pair).collect(),
            add: m.add.iter().filter_map(pair).collect(),
            remove: m
                .remove
                .iter()
                .filter_map(|n| HeaderName::from_bytes(n.to_ascii_lowercase().as_bytes()).ok())
                .collect(),
        }
    }

    pub fn apply(&self, headers: &mut http::HeaderMap) {
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
        for name in &self.remove {
            headers.remove(name);
        }
    }
}
