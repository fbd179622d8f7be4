//! A remote key set, kept fresh by a task of its own: started when the
//! JwtAuth resource is compiled, stopped when the compiled resource is
//! dropped (a reload that leaves the resource unchanged keeps it, keys and
//! schedule). The set is fetched again every refresh interval, or sooner
//! when the server's `max-age` says so (never more often than
//! [`MIN_REFRESH`]); a failure keeps the last good keys and is retried
//! with exponential backoff.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use coxswain_ir::RemoteJwks;
use tokio::task::AbortHandle;

use super::fetch::{Fetched, Fetcher};
use super::keys::KeySet;

/// The shortest wait between two successful fetches, whatever `max-age`.
pub const MIN_REFRESH: Duration = Duration::from_secs(30);
/// The first retry after a failed fetch; doubled per failure.
pub const FIRST_RETRY: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct RemoteKeys {
    current: Arc<ArcSwapOption<KeySet>>,
    task: Option<AbortHandle>,
}

impl RemoteKeys {
    /// Starts fetching `source` (on the current tokio runtime; without
    /// one nothing is fetched and every request is answered 503).
    pub fn start(source: &RemoteJwks) -> Self {
        let refresh = Duration::from_millis(source.refresh_interval_ms);
        let uri = source.uri.clone();
        match Fetcher::new(&uri, || {
            crate::backend_tls::roots(&coxswain_ir::BackendTrust::System)
        }) {
            Ok(fetcher) => {
                let fetcher = Arc::new(fetcher);
                Self::spawn(refresh, &uri, move || {
                    let fetcher = fetcher.clone();
                    async move { fetcher.fetch().await }
                })
            }
            Err(reason) => {
                tracing::warn!(%uri, %reason, "JwtAuth key set cannot be fetched");
                RemoteKeys {
                    current: Arc::default(),
                    task: None,
                }
            }
        }
    }

    /// Runs `fetch` on the refresh schedule.
    pub fn spawn<F, Fut>(refresh: Duration, uri: &str, fetch: F) -> Self
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<Fetched, String>> + Send + 'static,
    {
        let current: Arc<ArcSwapOption<KeySet>> = Arc::default();
        let task = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            runtime
                .spawn(refresh_loop(
                    current.clone(),
                    refresh,
                    uri.to_string(),
                    fetch,
                ))
                .abort_handle()
        });
        RemoteKeys { current, task }
    }

    /// The last good keys, if any fetch succeeded yet.
    pub fn current(&self) -> Option<Arc<KeySet>> {
        self.current.load_full()
    }
}

impl Drop for RemoteKeys {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn refresh_loop<F, Fut>(
    current: Arc<ArcSwapOption<KeySet>>,
    refresh: Duration,
    uri: String,
    mut fetch: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Fetched, String>>,
{
    let mut retry = FIRST_RETRY;
    loop {
        let wait = match fetch().await {
            Ok(fetched) => {
                tracing::debug!(%uri, keys = fetched.keys.len(), "JwtAuth key set fetched");
                current.store(Some(Arc::new(KeySet::new(&fetched.keys))));
                retry = FIRST_RETRY;
                next_refresh(refresh, fetched.max_age)
            }
            Err(reason) => {
                tracing::warn!(%uri, %reason, have_keys = current.load().is_some(), "JwtAuth key set fetch failed");
                let wait = retry;
                retry = retry.saturating_mul(2).min(refresh.max(FIRST_RETRY));
                wait
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// The wait after a good fetch: the refresh interval, or a shorter
/// `max-age` (at least [`MIN_REFRESH`]).
pub fn next_refresh(refresh: Duration, max_age: Option<Duration>) -> Duration {
    match max_age {
        Some(age) => refresh.min(age.max(MIN_REFRESH)),
        None => refresh,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use coxswain_ir::{Jwk, JwkKey, KeyBytes};
    use tokio::sync::mpsc;
    use tokio::time::Instant;

    use super::*;

    fn keys(n: usize) -> Vec<Jwk> {
        (0..n)
            .map(|i| Jwk {
                kid: Some(format!("k{i}")),
                alg: None,
                key: JwkKey::Ed25519 {
                    x: KeyBytes(vec![9; 32]),
                },
            })
            .collect()
    }

    fn ok(n: usize, max_age: Option<u64>) -> Result<Fetched, String> {
        Ok(Fetched {
            keys: keys(n),
            max_age: max_age.map(Duration::from_secs),
        })
    }

    /// A fetcher answering from `script` in order (then never again),
    /// reporting each call's time.
    type FetchFuture = std::pin::Pin<Box<dyn Future<Output = Result<Fetched, String>> + Send>>;

    fn scripted(
        script: Vec<Result<Fetched, String>>,
    ) -> (
        impl FnMut() -> FetchFuture + Send + 'static,
        mpsc::UnboundedReceiver<Instant>,
    ) {
        // FnMut: the closure owns its script, no lock needed.
        let mut script = VecDeque::from(script);
        let (tx, rx) = mpsc::unbounded_channel();
        let fetch = move || {
            let next = script.pop_front();
            let _ = tx.send(Instant::now());
            Box::pin(async move {
                match next {
                    Some(result) => result,
                    None => std::future::pending().await,
                }
            }) as FetchFuture
        };
        (fetch, rx)
    }

    #[test]
    fn max_age_shortens_the_refresh_but_never_below_the_floor() {
        let five_min = Duration::from_secs(300);
        assert_eq!(next_refresh(five_min, None), five_min);
        let age = |s| Some(Duration::from_secs(s));
        assert_eq!(next_refresh(five_min, age(60)), Duration::from_secs(60));
        assert_eq!(next_refresh(five_min, age(3)), MIN_REFRESH);
        assert_eq!(next_refresh(five_min, age(3600)), five_min);
    }

    #[tokio::test(start_paused = true)]
    async fn refreshes_on_schedule_backs_off_on_failure_and_keeps_the_last_good_keys() {
        let (fetch, mut calls) = scripted(vec![
            Err("connection refused".into()),
            Err("connection refused".into()),
            ok(1, None),
            ok(2, Some(60)),
            Err("500".into()),
            Err("500".into()),
            Err("500".into()),
            ok(3, None),
        ]);
        let start = Instant::now();
        let remote = RemoteKeys::spawn(Duration::from_secs(300), "http://issuer.test", fetch);
        let mut at = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..9 {
            at.push(calls.recv().await.unwrap().duration_since(start).as_secs());
            seen.push(remote.current().map_or(0, |k| k.len()));
        }
        // Failures retried after 1 s, then 2 s; the good fetch waits the
        // refresh interval; a max-age of 60 s shortens the next wait; three
        // failures back off 1, 2, 4 s and the keys of the last good fetch
        // stay in place meanwhile. (`seen`: the keys once each fetch's
        // result is in; the test runtime is single-threaded, so the loop
        // has stored it before the test reads.)
        assert_eq!(at, [0, 1, 3, 303, 363, 364, 366, 370, 670]);
        assert_eq!(seen, [0, 0, 1, 2, 2, 2, 2, 3, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_capped_at_the_refresh_interval() {
        let script = (0..6).map(|_| Err("down".to_string())).collect();
        let (fetch, mut calls) = scripted(script);
        let start = Instant::now();
        let _remote = RemoteKeys::spawn(Duration::from_secs(5), "http://issuer.test", fetch);
        let mut at = Vec::new();
        for _ in 0..6 {
            at.push(calls.recv().await.unwrap().duration_since(start).as_secs());
        }
        assert_eq!(at, [0, 1, 3, 7, 12, 17]);
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_keys_stops_the_task() {
        let script = (0..100).map(|_| ok(1, None)).collect();
        let (fetch, mut calls) = scripted(script);
        let remote = RemoteKeys::spawn(Duration::from_secs(30), "http://issuer.test", fetch);
        calls.recv().await.unwrap();
        calls.recv().await.unwrap();
        drop(remote);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(calls.try_recv().is_err(), "no fetch after the drop");
    }
}
