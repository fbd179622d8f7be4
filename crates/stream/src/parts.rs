//! A large update travels in parts of about [`PART_BYTES`], so neither
//! end's gRPC buffers grow to (and then keep) the size of a Gateway's whole
//! config: the first update of a proxy at 5,000 routes is 6.6 MB. Every
//! part but the last says `more`; the proxy applies the joined update once.

use crate::wire::ConfigUpdate;

/// Bodies per part (a single larger resource travels alone). At 5,000
/// routes 1 MiB parts left 2.2 MiB per connected proxy on the controller,
/// 256 KiB parts 1.5 MiB.
pub const PART_BYTES: usize = 256 * 1024;

/// `update` cut into parts: removals in the first, upserts in order.
pub fn split(mut update: ConfigUpdate, limit: usize) -> Vec<ConfigUpdate> {
    let upserts = std::mem::take(&mut update.upserts);
    let mut parts = vec![update.clone()];
    let mut size = 0usize;
    for resource in upserts {
        let len = resource.body.len() + resource.name.len() + resource.digest.len();
        let full = size > 0 && size + len > limit;
        if full {
            parts.push(ConfigUpdate {
                removals: Vec::new(),
                ..update.clone()
            });
            size = 0;
        }
        size += len;
        if let Some(part) = parts.last_mut() {
            part.upserts.push(resource);
        }
    }
    let last = parts.len() - 1;
    for (i, part) in parts.iter_mut().enumerate() {
        part.more = i < last;
    }
    parts
}

/// Joins parts as they arrive into the update they make.
#[derive(Default)]
pub struct Joiner {
    pending: Option<ConfigUpdate>,
    bytes: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PartError {
    #[error("a part of version {got} arrived while version {want} was being joined")]
    Mixed { got: String, want: String },
    #[error("the parts of version {version} add up to more than {limit} bytes")]
    TooLarge { version: String, limit: usize },
}

impl Joiner {
    /// The whole update once `part` was its last; `None` while more follow.
    pub fn push(
        &mut self,
        part: ConfigUpdate,
        limit: usize,
    ) -> Result<Option<ConfigUpdate>, PartError> {
        let more = part.more;
        self.bytes += part
            .upserts
            .iter()
            .map(|r| r.body.len() + r.name.len())
            .sum::<usize>();
        let joined = match self.pending.take() {
            None => part,
            Some(mut pending) => {
                if pending.version != part.version {
                    self.bytes = 0;
                    return Err(PartError::Mixed {
                        got: part.version,
                        want: pending.version,
                    });
                }
                pending.upserts.extend(part.upserts);
                pending.removals.extend(part.removals);
                pending
            }
        };
        if self.bytes > limit {
            let version = joined.version;
            self.bytes = 0;
            return Err(PartError::TooLarge { version, limit });
        }
        if more {
            self.pending = Some(joined);
            return Ok(None);
        }
        self.bytes = 0;
        Ok(Some(ConfigUpdate {
            more: false,
            ..joined
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Resource;

    fn update(sizes: &[usize]) -> ConfigUpdate {
        ConfigUpdate {
            version: "v".into(),
            ir_version: 1,
            upserts: sizes
                .iter()
                .enumerate()
                .map(|(i, n)| Resource {
                    name: format!("r{i}"),
                    digest: String::new(),
                    body: bytes::Bytes::from(vec![b'x'; *n]),
                })
                .collect(),
            removals: vec!["gone".into()],
            more: false,
        }
    }

    #[test]
    fn parts_join_back_into_the_update() {
        let whole = update(&[600, 600, 600, 2000, 10]);
        let parts = split(whole.clone(), 1000);
        let shape: Vec<(usize, usize, bool)> = parts
            .iter()
            .map(|p| (p.upserts.len(), p.removals.len(), p.more))
            .collect();
        assert_eq!(
            shape,
            [
                (1, 1, true),
                (1, 0, true),
                (1, 0, true),
                (1, 0, true),
                (1, 0, false)
            ]
        );
        let mut joiner = Joiner::default();
        let mut joined = None;
        for part in parts {
            assert!(joined.is_none(), "nothing after the last part");
            joined = joiner.push(part, usize::MAX).unwrap();
        }
        assert_eq!(joined, Some(whole.clone()));
        // A small update is one part.
        assert_eq!(split(whole.clone(), 1 << 20), vec![whole]);
    }

    #[test]
    fn mixed_or_oversized_parts_are_refused() {
        let parts = split(update(&[600, 600]), 700);
        let mut joiner = Joiner::default();
        assert_eq!(joiner.push(parts[0].clone(), usize::MAX), Ok(None));
        let other = ConfigUpdate {
            version: "w".into(),
            ..parts[1].clone()
        };
        assert!(matches!(
            joiner.push(other, usize::MAX),
            Err(PartError::Mixed { .. })
        ));
        let mut joiner = Joiner::default();
        assert_eq!(joiner.push(parts[0].clone(), 1000), Ok(None));
        assert!(matches!(
            joiner.push(parts[1].clone(), 1000),
            Err(PartError::TooLarge { .. })
        ));
    }
}
