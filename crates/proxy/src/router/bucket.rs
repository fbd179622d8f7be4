//! A host bucket: the (route, match) entries that apply to one route
//! hostname, sorted by precedence. Large buckets get a path index so lookup
//! does not scan every entry.

use std::collections::HashMap;
use std::sync::Arc;

use super::matcher::{CompiledMatch, CompiledPath};
use super::{CompiledRoute, RequestView};

/// Buckets up to this size are scanned linearly; larger ones are indexed.
const LINEAR_LIMIT: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub route: u32,
    pub matched: u32,
}

#[derive(Debug, Default)]
pub struct Bucket {
    /// Sorted by (MatchSpecificity, IR order).
    entries: Vec<Entry>,
    /// Boxed: only large buckets have one, and every hostname has a bucket
    /// (a hash-map slot each, sized by this field).
    index: Option<Box<PathIndex>>,
}

/// Candidate entry positions (into `Bucket::entries`, ascending) by path kind.
#[derive(Debug, Default)]
struct PathIndex {
    exact: HashMap<Box<str>, Vec<u32>>,
    regex: Vec<u32>,
    /// Node 0 is the root (prefix `/`).
    trie: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    parent: u32,
    children: HashMap<Box<str>, u32>,
    entries: Vec<u32>,
}

fn match_of(routes: &[Arc<CompiledRoute>], e: Entry) -> Option<&CompiledMatch> {
    routes
        .get(e.route as usize)
        .and_then(|r| r.matches.get(e.matched as usize))
}

/// Segments of a path below the root: `/a/b` -> `a`, `b`.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.strip_prefix('/')
        .filter(|rest| !rest.is_empty())
        .into_iter()
        .flat_map(|rest| rest.split('/'))
}

impl PathIndex {
    fn build(entries: &[Entry], routes: &[Arc<CompiledRoute>]) -> Self {
        let mut index = PathIndex {
            trie: vec![TrieNode::default()],
            ..PathIndex::default()
        };
        for (pos, entry) in entries.iter().enumerate() {
            let pos = pos as u32;
            let Some(m) = match_of(routes, *entry) else {
                continue;
            };
            match &m.path {
                CompiledPath::Exact(p) => {
                    index.exact.entry(p.as_str().into()).or_default().push(pos)
                }
                CompiledPath::Regex(_) => index.regex.push(pos),
                CompiledPath::Prefix(p) => {
                    let node = index.insert_prefix(p);
                    if let Some(node) = index.trie.get_mut(node) {
                        node.entries.push(pos);
                    }
                }
            }
        }
        index
    }

    fn insert_prefix(&mut self, prefix: &str) -> usize {
        let mut node = 0usize;
        for seg in segments(prefix) {
            let existing = self
                .trie
                .get(node)
                .and_then(|n| n.children.get(seg).copied());
            node = match existing {
                Some(child) => child as usize,
                None => {
                    let child = self.trie.len();
                    self.trie.push(TrieNode {
                        parent: node as u32,
                        ..TrieNode::default()
                    });
                    if let Some(parent) = self.trie.get_mut(node) {
                        parent.children.insert(seg.into(), child as u32);
                    }
                    child
                }
            };
        }
        node
    }

    /// The deepest trie node whose prefix covers `path`.
    fn deepest(&self, path: &str) -> usize {
        let mut node = 0usize;
        for seg in segments(path) {
            match self.trie.get(node).and_then(|n| n.children.get(seg)) {
                Some(&child) => node = child as usize,
                None => break,
            }
        }
        node
    }
}

impl Bucket {
    pub fn new(entries: Vec<Entry>, routes: &[Arc<CompiledRoute>]) -> Self {
        let index =
            (entries.len() > LINEAR_LIMIT).then(|| Box::new(PathIndex::build(&entries, routes)));
        Bucket { entries, index }
    }

    fn try_positions(
        &self,
        positions: &[u32],
        routes: &[Arc<CompiledRoute>],
        req: &RequestView<'_>,
    ) -> Option<Entry> {
        positions
            .iter()
            .filter_map(|&pos| self.entries.get(pos as usize).copied())
            .find(|&e| match_of(routes, e).is_some_and(|m| m.matches(req)))
    }

    /// The first entry, in precedence order, that fully matches `req`.
    pub fn find(&self, routes: &[Arc<CompiledRoute>], req: &RequestView<'_>) -> Option<Entry> {
        let Some(index) = &self.index else {
            return self
                .entries
                .iter()
                .copied()
                .find(|&e| match_of(routes, e).is_some_and(|m| m.matches(req)));
        };
        // Sort order puts every exact match before every regex before every
        // prefix, and deeper (longer) prefixes before shallower ones.
        if let Some(hit) = index
            .exact
            .get(req.path)
            .and_then(|c| self.try_positions(c, routes, req))
        {
            return Some(hit);
        }
        if let Some(hit) = self.try_positions(&index.regex, routes, req) {
            return Some(hit);
        }
        let mut node = index.deepest(req.path);
        loop {
            let trie_node = index.trie.get(node)?;
            if let Some(hit) = self.try_positions(&trie_node.entries, routes, req) {
                return Some(hit);
            }
            if node == 0 {
                return None;
            }
            node = trie_node.parent as usize;
        }
    }
}
