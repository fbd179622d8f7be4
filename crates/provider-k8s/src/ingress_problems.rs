//! Ingress status has no conditions, so what an Ingress asks for that is
//! not served as written (unsupported or invalid annotations among it) is
//! logged, once per change, by every controller replica.

use std::collections::BTreeMap;

use coxswain_api::ObjectKey;
use coxswain_translate::Statuses;

/// The problems last logged, by Ingress.
#[derive(Default)]
pub struct IngressProblemLog {
    last: BTreeMap<ObjectKey, Vec<String>>,
}

impl IngressProblemLog {
    /// Logs the problems of every Ingress whose problems changed.
    pub fn update(&mut self, statuses: &Statuses) {
        let now: BTreeMap<ObjectKey, Vec<String>> = statuses
            .ingresses
            .iter()
            .filter(|(_, o)| !o.problems.is_empty())
            .map(|(k, o)| {
                (
                    k.clone(),
                    o.problems.iter().map(ToString::to_string).collect(),
                )
            })
            .collect();
        for (key, problems) in &now {
            if self.last.get(key) != Some(problems) {
                for problem in problems {
                    tracing::warn!("Ingress {key}: {problem}");
                }
            }
        }
        self.last = now;
    }
}
