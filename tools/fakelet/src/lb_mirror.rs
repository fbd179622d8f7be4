//! A local copy of a watched collection, following kube's watcher events
//! (a re-list replaces the copy once it is complete).

use std::collections::BTreeMap;

use kube::runtime::watcher::Event;

pub struct Mirror<T> {
    key: fn(&T) -> String,
    items: BTreeMap<String, T>,
    /// The re-list in progress.
    relist: Option<BTreeMap<String, T>>,
    synced: bool,
}

impl<T> Mirror<T> {
    pub fn new(key: fn(&T) -> String) -> Self {
        Self {
            key,
            items: BTreeMap::new(),
            relist: None,
            synced: false,
        }
    }

    pub fn apply(&mut self, event: Event<T>) {
        match event {
            Event::Init => self.relist = Some(BTreeMap::new()),
            Event::InitApply(item) => {
                let key = (self.key)(&item);
                self.relist.get_or_insert_default().insert(key, item);
            }
            Event::InitDone => {
                self.items = self.relist.take().unwrap_or_default();
                self.synced = true;
            }
            Event::Apply(item) => {
                self.items.insert((self.key)(&item), item);
            }
            Event::Delete(item) => {
                self.items.remove(&(self.key)(&item));
            }
        }
    }

    /// Whether a first full list has arrived.
    pub fn synced(&self) -> bool {
        self.synced
    }

    pub fn items(&self) -> Vec<&T> {
        self.items.values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirror() -> Mirror<(String, u32)> {
        Mirror::new(|item: &(String, u32)| item.0.clone())
    }

    fn item(key: &str, value: u32) -> (String, u32) {
        (key.to_string(), value)
    }

    #[test]
    fn follows_events_and_replaces_on_relist() {
        let mut m = mirror();
        assert!(!m.synced());
        m.apply(Event::Init);
        m.apply(Event::InitApply(item("a", 1)));
        m.apply(Event::InitApply(item("b", 1)));
        m.apply(Event::InitDone);
        assert!(m.synced());
        m.apply(Event::Apply(item("a", 2)));
        m.apply(Event::Delete(item("b", 1)));
        assert_eq!(m.items(), vec![&item("a", 2)]);
        // A re-list keeps serving the old copy until it is complete.
        m.apply(Event::Init);
        m.apply(Event::InitApply(item("c", 1)));
        assert_eq!(m.items(), vec![&item("a", 2)]);
        m.apply(Event::InitDone);
        assert_eq!(m.items(), vec![&item("c", 1)]);
    }
}
