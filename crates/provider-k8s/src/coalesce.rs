//! Bursts of watch events become one translation: after the first change
//! we keep taking changes until the stream is quiet for a short window,
//! but never wait longer than a cap after the first change. (A lone
//! change, arriving while the loop was idle with nothing behind it, is
//! translated at once: see the controller loop.)

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, timeout_at};

use crate::store::{Seen, Store};

/// Quiet window: a change this close to the previous one joins the burst.
pub const QUIET: Duration = Duration::from_millis(10);
/// A burst is cut after this long, so constant churn cannot starve updates.
pub const CAP: Duration = Duration::from_millis(100);

/// Applies changes until `quiet` passes without one or `cap` after
/// `first` is reached. Returns how many changes it took, or `None` when
/// every watcher has gone.
pub async fn gather(
    changes: &mut UnboundedReceiver<Seen>,
    store: &mut Store,
    first: Instant,
    quiet: Duration,
    cap: Duration,
) -> Option<usize> {
    let hard_stop = first + cap;
    let mut taken = 0;
    loop {
        let deadline = (Instant::now() + quiet).min(hard_stop);
        match timeout_at(deadline, changes.recv()).await {
            Ok(Some((_, change))) => {
                store.apply(change);
                taken += 1;
                if Instant::now() >= hard_stop {
                    return Some(taken);
                }
            }
            Ok(None) => return None,
            Err(_elapsed) => return Some(taken),
        }
    }
}

#[cfg(test)]
mod tests {
    use coxswain_api::ObjectKey;
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;
    use crate::store::Change;

    fn change() -> Seen {
        let change = Change::Delete(coxswain_api::Kind::Service, ObjectKey::new("default", "x"));
        (Instant::now(), change)
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_returns_after_the_window() {
        let (tx, mut rx) = unbounded_channel();
        let mut store = Store::default();
        tx.send(change()).unwrap();
        tx.send(change()).unwrap();
        let start = Instant::now();
        let taken = gather(&mut rx, &mut store, start, QUIET, CAP).await;
        assert_eq!(taken, Some(2));
        assert_eq!(start.elapsed(), QUIET);
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_trickle_is_cut_at_the_cap() {
        let (tx, mut rx) = unbounded_channel();
        let start = Instant::now();
        let sender = tokio::spawn(async move {
            for _ in 0..50 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                if tx.send(change()).is_err() {
                    break;
                }
            }
        });
        let mut store = Store::default();
        let taken = gather(&mut rx, &mut store, start, QUIET, CAP)
            .await
            .unwrap();
        assert!(start.elapsed() <= CAP + Duration::from_millis(1));
        assert!((15..=21).contains(&taken), "took {taken}");
        sender.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn closed_stream_reports_none() {
        let (tx, mut rx) = unbounded_channel::<Seen>();
        drop(tx);
        let mut store = Store::default();
        assert_eq!(
            gather(&mut rx, &mut store, Instant::now(), QUIET, CAP).await,
            None
        );
    }
}
