//! Which Ingresses are ours: by `spec.ingressClassName` naming one of our
//! IngressClasses (or the deprecated `kubernetes.io/ingress.class`
//! annotation, read only when the field is absent), or, without a class,
//! when one of our IngressClasses is marked the cluster default.

use std::collections::BTreeMap;

use coxswain_api::{Ingress, IngressClass, Snapshot};

use crate::Options;

/// Marks the IngressClass that Ingresses without a class belong to.
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The class annotation older Ingresses carry instead of `ingressClassName`.
pub const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The IngressClasses of the snapshot, and which of them are ours.
pub struct Classes<'a> {
    /// Every IngressClass by name: `true` when its controller is ours.
    by_name: BTreeMap<&'a str, (bool, &'a IngressClass)>,
    /// Ours when no IngressClass object of that name exists (`--ingress-class`).
    flag: Option<&'a str>,
    /// Our class marked default, if any (the first by name).
    default: Option<&'a str>,
}

impl<'a> Classes<'a> {
    pub fn new(snapshot: &'a Snapshot, options: &'a Options) -> Self {
        let by_name: BTreeMap<&str, (bool, &IngressClass)> = snapshot
            .ingress_classes
            .iter()
            .map(|(key, class)| {
                let ours = class.spec.as_ref().and_then(|s| s.controller.as_deref())
                    == Some(&*options.controller_name);
                (&*key.name, (ours, class.as_ref()))
            })
            .collect();
        let default = by_name
            .iter()
            .find(|(_, (ours, class))| *ours && is_default(class))
            .map(|(name, _)| *name);
        Classes {
            by_name,
            flag: options.ingress.class.as_deref(),
            default,
        }
    }

    /// The class through which `ingress` is ours, or `None` when it is not.
    pub fn ours(&self, ingress: &'a Ingress) -> Option<&'a str> {
        match class_name(ingress) {
            Some(name) => match self.by_name.get(name) {
                Some((ours, _)) => ours.then_some(name),
                None => (self.flag == Some(name)).then_some(name),
            },
            None => self.default,
        }
    }

    /// Does our class `name` carry `spec.parameters` (which we do not read)?
    pub fn has_parameters(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .and_then(|(_, class)| class.spec.as_ref())
            .is_some_and(|s| s.parameters.is_some())
    }
}

fn is_default(class: &IngressClass) -> bool {
    class
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
        .is_some_and(|v| v == "true")
}

fn class_name(ingress: &Ingress) -> Option<&str> {
    let field = ingress
        .spec
        .as_ref()
        .and_then(|s| s.ingress_class_name.as_deref());
    field.or_else(|| {
        ingress
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(LEGACY_CLASS_ANNOTATION))
            .map(String::as_str)
    })
}
