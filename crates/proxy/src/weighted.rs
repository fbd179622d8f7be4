//! Weighted random choice among a route's backends (HTTP requests, TCP
//! connections, UDP sessions alike).

/// Items with positive weights; zero-weight items are left out.
#[derive(Debug)]
pub struct Weighted<T> {
    /// (running total of weights up to and including the item, item)
    items: Vec<(u64, T)>,
    total: u64,
}

impl<T> Weighted<T> {
    pub fn new(items: impl IntoIterator<Item = (u32, T)>) -> Self {
        let mut total = 0u64;
        let mut items: Vec<_> = items
            .into_iter()
            .filter(|(w, _)| *w > 0)
            .map(|(w, item)| {
                total += u64::from(w);
                (total, item)
            })
            .collect();
        // A filtered collect starts at four slots; a route keeps its
        // backends for the config's life, and most have one.
        items.shrink_to_fit();
        Weighted { items, total }
    }

    /// Every item with weight, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map(|(_, t)| t)
    }

    /// One item, each with probability weight / total; `None` when no
    /// item has weight.
    pub fn choose(&self) -> Option<&T> {
        if self.total == 0 {
            return None;
        }
        let pick = rand::random_range(0..self.total);
        self.items.iter().find(|(c, _)| pick < *c).map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_weights_never_chosen_and_shares_follow_weights() {
        let w = Weighted::new([(70, "a"), (30, "b"), (0, "c")]);
        let mut counts = [0usize; 3];
        for _ in 0..10_000 {
            match *w.choose().unwrap() {
                "a" => counts[0] += 1,
                "b" => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        assert_eq!(counts[2], 0);
        assert!((6_500..7_500).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn nothing_to_choose_without_weight() {
        assert!(Weighted::new([(0, 1)]).choose().is_none());
        assert!(Weighted::<u8>::new([]).choose().is_none());
    }
}
