//! Watches the config directory (inotify via `notify`) and sends a fresh
//! snapshot after every burst of changes. Bursts are coalesced with a short
//! quiet window rather than a fixed debounce, so one save is seen within a
//! few milliseconds while an editor's write-rename-chmod dance or a `cp -r`
//! still produces a single reload.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind};
use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

use crate::files::{is_config_file, under_hidden_dir};
use crate::provider::{FileProvider, Loaded};

/// Quiet time that ends a burst of events.
const QUIET: Duration = Duration::from_millis(5);
/// Quiet time after a write was completed (file closed or renamed into
/// place): anything still coming is part of the same save only if it follows
/// immediately.
const QUIET_AFTER_COMPLETE: Duration = Duration::from_micros(500);
/// A burst never delays a reload longer than this.
const MAX_BURST: Duration = Duration::from_millis(50);

/// A snapshot after some files changed.
#[derive(Debug)]
pub struct Reload {
    /// The new snapshot and errors; `objects` is left empty (see
    /// [`FileProvider::loaded_snapshot`]).
    pub loaded: Loaded,
    /// Config files re-read or removed (empty after a full rescan).
    pub changed: Vec<PathBuf>,
    /// When the first event of the burst arrived (for latency metrics).
    pub first_event: Instant,
    /// When the new snapshot was ready.
    pub built: Instant,
}

/// Keeps the watch alive; dropping it stops watching.
pub struct Watcher {
    _watcher: notify::RecommendedWatcher,
}

impl Watcher {
    /// Starts watching `dir`, then loads it. Returns the initial load and a
    /// channel of reloads. Watching starts before the first read, so no
    /// change can slip between them.
    pub fn start(
        dir: impl Into<PathBuf>,
    ) -> notify::Result<(Watcher, Loaded, mpsc::UnboundedReceiver<Reload>)> {
        let dir: PathBuf = dir.into();
        // Events carry absolute paths; files are keyed by the path as the
        // user spelled it (so errors read `config/route.yaml:3:1`).
        let absolute = std::fs::canonicalize(&dir)?;
        let (event_tx, event_rx) = std_mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = event_tx.send(event);
        })?;
        watcher.watch(&dir, RecursiveMode::Recursive)?;
        let mut provider = FileProvider::new(dir);
        provider.reload_all();
        let initial = provider.loaded();
        let (reload_tx, reload_rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("config-watch".into())
            .spawn(move || watch_loop(provider, &absolute, event_rx, reload_tx))
            .map_err(|e| notify::Error::generic(&e.to_string()))?;
        Ok((Watcher { _watcher: watcher }, initial, reload_rx))
    }
}

type EventResult = notify::Result<notify::Event>;

fn watch_loop(
    mut provider: FileProvider,
    absolute: &Path,
    events: std_mpsc::Receiver<EventResult>,
    reloads: mpsc::UnboundedSender<Reload>,
) {
    // Files whose writer had not closed them when the last burst ended.
    let mut deferred = BTreeSet::new();
    while let Ok(first) = events.recv() {
        let first_event = Instant::now();
        let mut burst = Burst {
            files: deferred.clone(),
            writing: std::mem::take(&mut deferred),
            rescan: false,
            completed: false,
        };
        let roots = Roots {
            absolute,
            given: provider.root(),
        };
        burst.add(&roots, first);
        while first_event.elapsed() < MAX_BURST {
            let quiet = if burst.completed && burst.writing.is_empty() {
                QUIET_AFTER_COMPLETE
            } else {
                QUIET
            };
            match events.recv_timeout(quiet) {
                Ok(event) => burst.add(&roots, event),
                // A file still open for writing would be read half-written;
                // wait for its close (bounded by MAX_BURST).
                Err(std_mpsc::RecvTimeoutError::Timeout) if burst.writing.is_empty() => break,
                Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
        // Still being written at the cap: read it after its writer closes it.
        for path in &burst.writing {
            burst.files.remove(path);
        }
        deferred = std::mem::take(&mut burst.writing);
        let changed = if burst.rescan {
            provider.reload_all();
            Vec::new()
        } else if burst.files.is_empty() {
            continue;
        } else {
            for path in &burst.files {
                provider.reload_file(path);
            }
            burst.files.into_iter().collect()
        };
        let loaded = provider.loaded_snapshot();
        let reload = Reload {
            loaded,
            changed,
            first_event,
            built: Instant::now(),
        };
        if reloads.send(reload).is_err() {
            return;
        }
    }
}

/// The config directory as events name it and as the user named it.
struct Roots<'a> {
    absolute: &'a Path,
    given: &'a Path,
}

impl Roots<'_> {
    fn user_path(&self, event_path: &Path) -> PathBuf {
        match event_path.strip_prefix(self.absolute) {
            Ok(relative) => self.given.join(relative),
            Err(_) => event_path.to_path_buf(),
        }
    }
}

/// What one burst of events asks us to re-read.
#[derive(Default)]
struct Burst {
    files: BTreeSet<PathBuf>,
    /// Files written to but not yet closed by their writer.
    writing: BTreeSet<PathBuf>,
    /// Directories came or went, or the OS dropped events: read everything.
    rescan: bool,
    /// The latest event finished a write (close after write, rename into
    /// place, removal), so the burst can end sooner.
    completed: bool,
}

impl Burst {
    fn add(&mut self, roots: &Roots<'_>, event: EventResult) {
        let Ok(event) = event else {
            self.rescan = true;
            return;
        };
        // Our own reads raise Access(Open) events: reacting to them would
        // loop forever. A closed-after-write still matters (the write is done).
        let relevant = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) | EventKind::Other => false,
            _ => true,
        };
        if event.need_rescan() {
            self.rescan = true;
            return;
        }
        if !relevant {
            return;
        }
        if matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder)
        ) {
            self.rescan = true;
            return;
        }
        let closed = matches!(
            event.kind,
            EventKind::Access(AccessKind::Close(AccessMode::Write))
                | EventKind::Remove(_)
                | EventKind::Modify(ModifyKind::Name(_))
        );
        let written = matches!(
            event.kind,
            EventKind::Create(CreateKind::File) | EventKind::Modify(ModifyKind::Data(_))
        );
        self.completed = closed;
        for path in event.paths {
            let path = roots.user_path(&path);
            if under_hidden_dir(roots.given, &path) {
                continue;
            }
            if is_config_file(&path) {
                if closed {
                    self.writing.remove(&path);
                } else if written {
                    self.writing.insert(path.clone());
                }
                self.files.insert(path);
            } else if path.is_dir() {
                // A directory renamed into place: its files are new to us.
                self.rescan = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_paths_map_back_to_the_given_root() {
        let roots = Roots {
            absolute: Path::new("/work/cfg"),
            given: Path::new("cfg"),
        };
        assert_eq!(
            roots.user_path(Path::new("/work/cfg/a/r.yaml")),
            Path::new("cfg/a/r.yaml")
        );
        assert_eq!(
            roots.user_path(Path::new("/elsewhere/x.yaml")),
            Path::new("/elsewhere/x.yaml")
        );
    }
}
