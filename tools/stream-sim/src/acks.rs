//! How the proxies' process tells the controller's which proxy applied
//! which version: one line per applied update on its stdout,
//! `ack <proxy> <version> <cpu_us>`, where `cpu_us` is that process's CPU
//! time so far. The hub's reports are per Gateway (the last version any
//! proxy acknowledged), so they cannot say when the Nth proxy did; these
//! lines can.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, Lines};

pub struct Ack {
    pub proxy: usize,
    pub version: String,
    pub cpu: Duration,
}

pub fn format(ack: &Ack) -> String {
    format!(
        "ack {} {} {}\n",
        ack.proxy,
        ack.version,
        ack.cpu.as_micros()
    )
}

pub fn parse(line: &str) -> anyhow::Result<Ack> {
    let mut words = line.split_ascii_whitespace();
    let (Some("ack"), Some(proxy), Some(version), Some(cpu), None) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        bail!("not an ack line: {line:?}");
    };
    Ok(Ack {
        proxy: proxy
            .parse()
            .with_context(|| format!("proxy in {line:?}"))?,
        version: version.to_string(),
        cpu: Duration::from_micros(cpu.parse().with_context(|| format!("cpu in {line:?}"))?),
    })
}

/// The controller's end of the lines.
pub struct Acks<R> {
    lines: Lines<R>,
    /// Lines that were not the first ack of the version awaited (a proxy
    /// that reconnected and applied again): zero in a clean run.
    pub stray: u64,
}

impl<R: AsyncBufRead + Unpin> Acks<R> {
    pub fn new(reader: R) -> Acks<R> {
        Acks {
            lines: reader.lines(),
            stray: 0,
        }
    }

    /// Reads until `count` distinct proxies applied `version`; returns the
    /// proxies' process's CPU time at the last of them.
    pub async fn wait(&mut self, version: &str, count: usize) -> anyhow::Result<Duration> {
        let mut seen = HashSet::new();
        let mut cpu = Duration::ZERO;
        while seen.len() < count {
            let line = self
                .lines
                .next_line()
                .await
                .context("reading the proxies' acks")?
                .context("the proxies' process ended")?;
            let ack = parse(&line)?;
            if ack.version == version && seen.insert(ack.proxy) {
                cpu = cpu.max(ack.cpu);
            } else {
                self.stray += 1;
            }
        }
        Ok(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_distinct_proxies_of_the_version() {
        let text = [
            Ack {
                proxy: 0,
                version: "v1".into(),
                cpu: Duration::from_micros(5),
            },
            Ack {
                proxy: 0,
                version: "v1".into(),
                cpu: Duration::from_micros(6),
            },
            Ack {
                proxy: 1,
                version: "v0".into(),
                cpu: Duration::from_micros(7),
            },
            Ack {
                proxy: 1,
                version: "v1".into(),
                cpu: Duration::from_micros(9),
            },
        ]
        .iter()
        .map(format)
        .collect::<String>();
        let mut acks = Acks::new(text.as_bytes());
        assert_eq!(acks.wait("v1", 2).await.unwrap(), Duration::from_micros(9));
        assert_eq!(acks.stray, 2);
        assert!(acks.wait("v2", 1).await.is_err(), "the end of the lines");
        assert!(parse("ack 1 v").is_err());
    }
}
