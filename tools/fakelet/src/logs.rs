//! Container logs: each run of a container appends timestamped lines to
//! `<pod dir>/logs/<container>/<restart>.log`; the log endpoint reads them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

pub fn container_dir(pod_dir: &Path, container: &str) -> PathBuf {
    pod_dir.join("logs").join(container)
}

pub fn run_log_path(pod_dir: &Path, container: &str, restart: u32) -> PathBuf {
    container_dir(pod_dir, container).join(format!("{restart}.log"))
}

/// The log of the current run, or of the one before with `previous`.
pub fn pick_run(pod_dir: &Path, container: &str, previous: bool) -> Option<PathBuf> {
    let dir = container_dir(pod_dir, container);
    let mut runs: Vec<u32> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name();
            name.to_str()?.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    runs.sort_unstable();
    let pick = if previous {
        runs.iter().rev().nth(1)
    } else {
        runs.last()
    };
    pick.map(|run| dir.join(format!("{run}.log")))
}

pub type Sink = Arc<Mutex<tokio::fs::File>>;

pub async fn open_sink(path: &Path) -> std::io::Result<Sink> {
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent).await?;
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    Ok(Arc::new(Mutex::new(file)))
}

pub fn timestamp_now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%9fZ")
        .to_string()
}

/// Copies a stream line by line into the sink, each line prefixed with the
/// time it was read (RFC 3339, nanoseconds), as the kubelet stores logs.
pub async fn copy_lines(stream: impl AsyncRead + Unpin, sink: Sink) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                let mut record = timestamp_now().into_bytes();
                record.push(b' ');
                record.extend_from_slice(&line);
                let mut file = sink.lock().await;
                // tokio's File writes in the background: flush so readers see the line.
                if file.write_all(&record).await.is_err() || file.flush().await.is_err() {
                    return;
                }
            }
        }
    }
}

/// What the log endpoint was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    pub timestamps: bool,
    pub tail_lines: Option<usize>,
    pub limit_bytes: Option<usize>,
    pub previous: bool,
    pub follow: bool,
    /// `sinceTime`: only lines logged at or after it.
    pub since: Option<jiff::Timestamp>,
}

impl LogQuery {
    pub fn parse(query: &str) -> Self {
        let mut parsed = Self::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
            let flag = value == "true" || value == "1";
            match key {
                "timestamps" => parsed.timestamps = flag,
                "previous" => parsed.previous = flag,
                "follow" => parsed.follow = flag,
                "tailLines" => parsed.tail_lines = value.parse().ok(),
                "limitBytes" => parsed.limit_bytes = value.parse().ok(),
                // RFC 3339 in a query: `:` (and a zone's `+`) arrive escaped.
                "sinceTime" => {
                    let value = value.replace("%3A", ":").replace("%3a", ":");
                    parsed.since = value.replace("%2B", "+").parse().ok();
                }
                _ => {}
            }
        }
        parsed
    }
}

/// Renders stored lines for a reply: those since `since`, the last
/// `tail_lines` of them, without the timestamp prefix unless asked, cut at
/// `limit_bytes`.
pub fn render(stored: &[u8], query: &LogQuery) -> Vec<u8> {
    let stamp = |line: &[u8]| -> Option<jiff::Timestamp> {
        let end = line.iter().position(|b| *b == b' ')?;
        std::str::from_utf8(line.get(..end)?).ok()?.parse().ok()
    };
    let lines: Vec<&[u8]> = stored
        .split_inclusive(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .filter(|line| match query.since {
            Some(since) => stamp(line).is_none_or(|t| t >= since),
            None => true,
        })
        .collect();
    let skip = query
        .tail_lines
        .map_or(0, |tail| lines.len().saturating_sub(tail));
    let mut out = Vec::new();
    for line in lines.into_iter().skip(skip) {
        if query.timestamps {
            out.extend_from_slice(line);
        } else {
            let body = line
                .iter()
                .position(|b| *b == b' ')
                .map_or(line, |space| &line[space + 1..]);
            out.extend_from_slice(body);
        }
    }
    if let Some(limit) = query.limit_bytes {
        out.truncate(limit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORED: &[u8] =
        b"2026-01-01T00:00:00.000000001Z one\n2026-01-01T00:00:01.000000000Z two words\n2026-01-01T00:00:02.000000000Z three\n";

    #[test]
    fn renders_without_and_with_timestamps() {
        let plain = render(STORED, &LogQuery::default());
        assert_eq!(plain, b"one\ntwo words\nthree\n");
        let stamped = render(STORED, &LogQuery::parse("timestamps=true"));
        assert_eq!(stamped, STORED);
    }

    #[test]
    fn tails_and_limits() {
        let query = LogQuery::parse("tailLines=2&limitBytes=5");
        assert_eq!(query.tail_lines, Some(2));
        assert_eq!(render(STORED, &query), b"two w");
        assert_eq!(render(STORED, &LogQuery::parse("tailLines=9")).len(), 20);
    }

    #[test]
    fn since_time_keeps_later_lines() {
        let query = LogQuery::parse("sinceTime=2026-01-01T00%3A00%3A01Z");
        assert_eq!(render(STORED, &query), b"two words\nthree\n");
        let bad = LogQuery::parse("sinceTime=yesterday");
        assert_eq!(bad.since, None, "an unparsable time filters nothing");
    }

    #[test]
    fn parses_flags() {
        let query = LogQuery::parse("follow=true&previous=1&timestamps=false&unknown=x");
        assert!(query.follow && query.previous && !query.timestamps);
    }

    #[tokio::test]
    async fn copies_lines_with_timestamps_and_picks_runs() {
        let dir = std::env::temp_dir().join(format!("fakelet-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for run in [0, 1] {
            let sink = open_sink(&run_log_path(&dir, "web", run)).await.unwrap();
            copy_lines(&b"hello\nno newline"[..], sink).await;
        }
        let current = pick_run(&dir, "web", false).unwrap();
        assert!(current.ends_with("web/1.log"));
        assert!(pick_run(&dir, "web", true).unwrap().ends_with("web/0.log"));
        let stored = std::fs::read(&current).unwrap();
        assert_eq!(
            render(&stored, &LogQuery::default()),
            b"hello\nno newline\n"
        );
        let first = String::from_utf8(stored).unwrap();
        let stamp = first.split(' ').next().unwrap();
        assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "{stamp}");
        assert!(pick_run(&dir, "other", false).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
