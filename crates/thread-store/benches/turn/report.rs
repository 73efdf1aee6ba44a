//! The measurements, printed as they are taken (a Markdown row, or one JSON object per line
//! with `--json`), and the targets of issue 15 checked at the end.

use std::time::Duration;

use crate::workloads::Concurrent;

/// One measurement. `config: "default"` marks what a user gets without choosing anything.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Measurement {
    pub(crate) name: String,
    /// `memory`, `sqlite`, `postgres`, `bare-sqlite` or `bare-postgres`.
    pub(crate) adapter: &'static str,
    /// `default`, or the mode chosen instead (`blocking-pool`, `single-connection`, `sticky`,
    /// ...).
    pub(crate) config: &'static str,
    /// `FULL`, `NORMAL`, `pg`, or `none` for the memory store.
    pub(crate) sync: &'static str,
    /// Threads running turns at once (1: one at a time).
    pub(crate) concurrency: usize,
    pub(crate) turns_per_s: f64,
    /// The median time per turn: of per-sample means when sequential, of single turns when
    /// concurrent (for listing rows: per page).
    pub(crate) median_us: f64,
    #[serde(skip)]
    pub(crate) note: String,
}

impl Measurement {
    pub(crate) fn new(adapter: &'static str, config: &'static str, sync: &'static str) -> Self {
        Self {
            name: String::new(),
            adapter,
            config,
            sync,
            concurrency: 1,
            turns_per_s: 0.0,
            median_us: 0.0,
            note: String::new(),
        }
    }

    pub(crate) fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// One at a time: `per_turn` is the median of the samples' mean turn times.
    pub(crate) fn sequential(mut self, per_turn: Duration, note: &str) -> Self {
        self.concurrency = 1;
        self.median_us = per_turn.as_secs_f64() * 1e6;
        self.turns_per_s = 1.0 / per_turn.as_secs_f64();
        self.note = note.to_owned();
        self
    }

    pub(crate) fn concurrent(mut self, threads: usize, c: Concurrent, note: &str) -> Self {
        self.concurrency = threads;
        self.median_us = c.median_latency.as_secs_f64() * 1e6;
        self.turns_per_s = c.turns_per_s;
        self.note = note.to_owned();
        self
    }

    pub(crate) fn note(mut self, note: String) -> Self {
        self.note = note;
        self
    }
}

pub(crate) struct Report {
    json: bool,
    rows: Vec<Measurement>,
}

impl Report {
    pub(crate) fn new(json: bool) -> Self {
        if !json {
            println!(
                "| measurement | adapter | config | sync | threads at once | median per turn | turns per second | note |"
            );
            println!("|---|---|---|---|---|---|---|---|");
        }
        Self {
            json,
            rows: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, m: Measurement) {
        if self.json {
            println!("{}", serde_json::to_string(&m).unwrap());
        } else {
            println!(
                "| {} | {} | {} | {} | {} | {:.1} µs | {:.0} /s | {} |",
                m.name,
                m.adapter,
                m.config,
                m.sync,
                m.concurrency,
                m.median_us,
                m.turns_per_s,
                m.note
            );
        }
        self.rows.push(m);
    }

    pub(crate) fn skipped(&self, what: &str) {
        // Visible in either mode; never counted as a measurement.
        eprintln!("SKIPPED {what}");
        if !self.json {
            println!("| SKIPPED {what} | | | | | | | |");
        }
    }

    pub(crate) fn find(
        &self,
        name: &str,
        adapter: &str,
        config: &str,
        sync: &str,
    ) -> Option<&Measurement> {
        self.rows.iter().find(|m| {
            m.name == name && m.adapter == adapter && m.config == config && m.sync == sync
        })
    }

    /// Prints each target with its verdict: to stdout after the table, or to stderr in JSON
    /// mode, whose stdout holds measurements only.
    pub(crate) fn finish(&self) {
        let mut lines = vec![
            String::new(),
            "| target | measured | verdict |".to_owned(),
            "|---|---|---|".to_owned(),
        ];
        let mut target = |what: &str, ratio: Option<f64>, bound: f64, at_least: bool| {
            let (measured, verdict) = match ratio {
                Some(r) => {
                    let met = if at_least { r >= bound } else { r <= bound };
                    (format!("{r:.2}×"), if met { "met" } else { "**missed**" })
                }
                None => ("not measured".to_owned(), "**not measured**"),
            };
            lines.push(format!("| {what} | {measured} | {verdict} |"));
        };
        let rate = |name: &str, adapter: &str, config: &str, sync: &str| {
            self.find(name, adapter, config, sync)
                .map(|m| m.turns_per_s)
        };
        let ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
        let commit_full = rate("one-row commit", "bare-sqlite", "-", "FULL");
        target(
            "SQLite FULL, sequential, default: turns/s ≥ 0.80 × one-row commits/s",
            ratio(
                rate("adapter turn", "sqlite", "default", "FULL"),
                commit_full,
            ),
            0.8,
            true,
        );
        target(
            "SQLite NORMAL, sequential, default: time per turn ≤ 1.30 × the bare loop's",
            ratio(
                rate("bare rusqlite turn", "bare-sqlite", "-", "NORMAL"),
                rate("adapter turn", "sqlite", "default", "NORMAL"),
            ),
            1.3,
            false,
        );
        target(
            "SQLite FULL, 16 Threads at once, default: turns/s ≥ 3 × one-row commits/s",
            ratio(
                rate("16 Threads at once", "sqlite", "default", "FULL"),
                commit_full,
            ),
            3.0,
            true,
        );
        target(
            "PostgreSQL, 16 Threads at once, default pool: turns/s ≥ 4 × one connection, sequential",
            ratio(
                rate("16 Threads at once", "postgres", "default", "pg"),
                rate("adapter turn", "postgres", "single-connection", "pg"),
            ),
            4.0,
            true,
        );
        target(
            "PostgreSQL, sequential, sticky lease: turns/s ≥ 1.6 × the default turn's (issue 43)",
            ratio(
                rate("sticky turn", "postgres", "sticky", "pg"),
                rate("adapter turn", "postgres", "default", "pg"),
            ),
            1.6,
            true,
        );
        let text = lines.join("\n");
        if self.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
}
