//! Clause ids, verdicts and the [`Report`] of one conformance run.

use std::collections::BTreeMap;
use std::fmt;

/// One named clause of the driver contract. Every failure names its clause id
/// ([`Clause::id`], for example `SES-06`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Clause {
    /// DSC-01: the descriptor's type and display name are non-empty and trimmed.
    Dsc01,
    /// DSC-02: the descriptor is deterministic across calls and instances.
    Dsc02,
    /// CFG-01: `validate_config` accepts the factory's config without panicking.
    Cfg01,
    /// CAP-01: resume is declared iff a stable session codec and a config fingerprinter exist.
    Cap01,
    /// CAP-02: the config fingerprint is stable across calls and instances, and non-empty.
    Cap02,
    /// CAP-03: persistent processes are declared iff a process lifecycle exists.
    Cap03,
    /// CAP-04: fork is declared only together with resume.
    Cap04,
    /// SES-01: the codec name is non-empty and stable.
    Ses01,
    /// SES-02: nil or empty codec input never panics, and `None` maps to `None`.
    Ses02,
    /// SES-03: the codec round trip is lossless.
    Ses03,
    /// SES-04: the guard fingerprint is deterministic.
    Ses04,
    /// SES-05: the guard fingerprint changes when any guard value changes.
    Ses05,
    /// SES-06: the guard follows the profile's session-compatibility fingerprint, not the
    /// exact one.
    Ses06,
    /// EVT-01: exactly one run-started event, first.
    Evt01,
    /// EVT-02: exactly one terminal event.
    Evt02,
    /// EVT-03: nothing after the terminal event.
    Evt03,
    /// EVT-04: deltas are non-empty; tool-call lifecycles open once and close.
    Evt04,
    /// EVT-05: the terminal event agrees with the outcome.
    Evt05,
    /// RSP-01: a valid checkpoint requires a clean outcome and a resume id.
    Rsp01,
    /// RSP-02: a clean session turn yields a valid checkpoint that round-trips through the
    /// codec.
    Rsp02,
    /// RSP-03: a fork yields a new resume id.
    Rsp03,
    /// CUR-01: a resumed turn materializes the current MCP URL, env-var name and secret, and
    /// none of the old ones.
    Cur01,
    /// PRC-01: closing processes is idempotent and the driver runs again afterwards.
    Prc01,
    /// PRC-02: no live process remains after close.
    Prc02,
}

impl Clause {
    /// Every clause, in report order.
    pub const ALL: &'static [Clause] = &[
        Clause::Dsc01,
        Clause::Dsc02,
        Clause::Cfg01,
        Clause::Cap01,
        Clause::Cap02,
        Clause::Cap03,
        Clause::Cap04,
        Clause::Ses01,
        Clause::Ses02,
        Clause::Ses03,
        Clause::Ses04,
        Clause::Ses05,
        Clause::Ses06,
        Clause::Evt01,
        Clause::Evt02,
        Clause::Evt03,
        Clause::Evt04,
        Clause::Evt05,
        Clause::Rsp01,
        Clause::Rsp02,
        Clause::Rsp03,
        Clause::Cur01,
        Clause::Prc01,
        Clause::Prc02,
    ];

    /// The clause id, for example `SES-06`.
    pub fn id(self) -> &'static str {
        match self {
            Clause::Dsc01 => "DSC-01",
            Clause::Dsc02 => "DSC-02",
            Clause::Cfg01 => "CFG-01",
            Clause::Cap01 => "CAP-01",
            Clause::Cap02 => "CAP-02",
            Clause::Cap03 => "CAP-03",
            Clause::Cap04 => "CAP-04",
            Clause::Ses01 => "SES-01",
            Clause::Ses02 => "SES-02",
            Clause::Ses03 => "SES-03",
            Clause::Ses04 => "SES-04",
            Clause::Ses05 => "SES-05",
            Clause::Ses06 => "SES-06",
            Clause::Evt01 => "EVT-01",
            Clause::Evt02 => "EVT-02",
            Clause::Evt03 => "EVT-03",
            Clause::Evt04 => "EVT-04",
            Clause::Evt05 => "EVT-05",
            Clause::Rsp01 => "RSP-01",
            Clause::Rsp02 => "RSP-02",
            Clause::Rsp03 => "RSP-03",
            Clause::Cur01 => "CUR-01",
            Clause::Prc01 => "PRC-01",
            Clause::Prc02 => "PRC-02",
        }
    }

    /// One line saying what the clause requires.
    pub fn summary(self) -> &'static str {
        match self {
            Clause::Dsc01 => "descriptor type and display name are non-empty and trimmed",
            Clause::Dsc02 => "descriptor is deterministic across calls and instances",
            Clause::Cfg01 => "validate_config accepts the factory's config",
            Clause::Cap01 => {
                "resume is declared iff a stable session codec and a config fingerprinter exist"
            }
            Clause::Cap02 => "config fingerprint is stable and non-empty",
            Clause::Cap03 => "persistent processes are declared iff a process lifecycle exists",
            Clause::Cap04 => "fork is declared only together with resume",
            Clause::Ses01 => "codec name is non-empty and stable",
            Clause::Ses02 => "codec: nil or empty input never panics; None maps to None",
            Clause::Ses03 => "codec: round trip is lossless",
            Clause::Ses04 => "codec: guard fingerprint is deterministic",
            Clause::Ses05 => "codec: guard fingerprint changes when any guard value changes",
            Clause::Ses06 => {
                "guard follows the session-compatibility fingerprint, not the exact one"
            }
            Clause::Evt01 => "events: exactly one run-started, first",
            Clause::Evt02 => "events: exactly one terminal event",
            Clause::Evt03 => "events: nothing after the terminal event",
            Clause::Evt04 => "events: non-empty deltas; tool-call lifecycles open once and close",
            Clause::Evt05 => "events: the terminal event agrees with the outcome",
            Clause::Rsp01 => {
                "response: a valid checkpoint requires a clean outcome and a resume id"
            }
            Clause::Rsp02 => {
                "response: a clean session turn yields a valid, round-tripping checkpoint"
            }
            Clause::Rsp03 => "response: a fork yields a new resume id",
            Clause::Cur01 => {
                "current request: a resumed turn materializes the new endpoint and secret only"
            }
            Clause::Prc01 => "processes: close is idempotent and the driver runs again afterwards",
            Clause::Prc02 => "processes: no live process remains after close",
        }
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The verdict on one clause.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every check of the clause held.
    Passed,
    /// A check failed; the message says which (never a secret value).
    Failed(String),
    /// The clause was not checked, visibly: the driver does not declare the capability it
    /// covers, or the factory does not expose what it needs.
    Skipped(String),
}

/// The result of [`run`](super::run): one verdict per [`Clause`].
#[derive(Debug, Clone)]
pub struct Report {
    driver_type: String,
    verdicts: BTreeMap<Clause, Verdict>,
}

impl Report {
    /// The driver type named by the descriptor.
    pub fn driver_type(&self) -> &str {
        &self.driver_type
    }

    /// The verdict on a clause.
    pub fn verdict(&self, clause: Clause) -> &Verdict {
        self.verdicts.get(&clause).unwrap_or(&NOT_EVALUATED)
    }

    /// Every clause with its verdict, in report order.
    pub fn verdicts(&self) -> impl Iterator<Item = (Clause, &Verdict)> {
        Clause::ALL.iter().map(|c| (*c, self.verdict(*c)))
    }

    /// Whether the clause failed.
    pub fn failed(&self, clause: Clause) -> bool {
        matches!(self.verdict(clause), Verdict::Failed(_))
    }

    /// The failed clauses, in report order.
    pub fn failures(&self) -> Vec<Clause> {
        self.verdicts()
            .filter(|(_, v)| matches!(v, Verdict::Failed(_)))
            .map(|(c, _)| c)
            .collect()
    }

    /// The skipped clauses, in report order.
    pub fn skipped(&self) -> Vec<Clause> {
        self.verdicts()
            .filter(|(_, v)| matches!(v, Verdict::Skipped(_)))
            .map(|(c, _)| c)
            .collect()
    }

    /// Whether no clause failed (skipped clauses are allowed).
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Panics, naming every failed clause id, unless no clause failed.
    #[track_caller]
    pub fn assert_passed(&self) {
        if !self.passed() {
            panic!("{}", self.failure_message());
        }
    }

    /// Panics, naming every failed or skipped clause id, unless every clause passed.
    #[track_caller]
    pub fn assert_passed_without_skips(&self) {
        self.assert_passed();
        let skipped = self.skipped();
        if !skipped.is_empty() {
            let ids: Vec<&str> = skipped.iter().map(|c| c.id()).collect();
            panic!(
                "driver `{}` skipped conformance clauses {}:\n{self}",
                self.driver_type,
                ids.join(", ")
            );
        }
    }

    fn failure_message(&self) -> String {
        let ids: Vec<&str> = self.failures().iter().map(|c| c.id()).collect();
        format!(
            "driver `{}` fails conformance clauses {}:\n{self}",
            self.driver_type,
            ids.join(", ")
        )
    }
}

static NOT_EVALUATED: Verdict = Verdict::Failed(String::new());

impl fmt::Display for Report {
    /// One line per clause: `PASS|FAIL|SKIP <id> <summary>[: <detail>]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (clause, verdict) in self.verdicts() {
            match verdict {
                Verdict::Passed => writeln!(f, "PASS {clause} {}", clause.summary())?,
                Verdict::Failed(why) if why.is_empty() => {
                    writeln!(f, "FAIL {clause} {}: not evaluated", clause.summary())?
                }
                Verdict::Failed(why) => writeln!(f, "FAIL {clause} {}: {why}", clause.summary())?,
                Verdict::Skipped(why) => writeln!(f, "SKIP {clause} {}: {why}", clause.summary())?,
            }
        }
        Ok(())
    }
}

/// Collects verdicts: a failure beats a pass, a pass beats a skip, and the first failure
/// message is kept.
#[derive(Debug, Default)]
pub(super) struct Recorder {
    verdicts: BTreeMap<Clause, Verdict>,
}

impl Recorder {
    pub(super) fn pass(&mut self, clause: Clause) {
        match self.verdicts.get(&clause) {
            Some(Verdict::Failed(_) | Verdict::Passed) => {}
            _ => {
                self.verdicts.insert(clause, Verdict::Passed);
            }
        }
    }

    pub(super) fn fail(&mut self, clause: Clause, why: impl Into<String>) {
        if !matches!(self.verdicts.get(&clause), Some(Verdict::Failed(_))) {
            self.verdicts.insert(clause, Verdict::Failed(why.into()));
        }
    }

    pub(super) fn skip(&mut self, clause: Clause, why: impl Into<String>) {
        self.verdicts
            .entry(clause)
            .or_insert_with(|| Verdict::Skipped(why.into()));
    }

    /// Records `Ok` as a pass and `Err` as a failure.
    pub(super) fn check(&mut self, clause: Clause, result: Result<(), String>) {
        match result {
            Ok(()) => self.pass(clause),
            Err(why) => self.fail(clause, why),
        }
    }

    /// Marks every clause not yet judged as failed with this reason (fail closed).
    pub(super) fn fail_rest(&mut self, why: &str) {
        for clause in Clause::ALL {
            if !self.verdicts.contains_key(clause) {
                self.verdicts
                    .insert(*clause, Verdict::Failed(format!("not checked: {why}")));
            }
        }
    }

    pub(super) fn finish(mut self, driver_type: String) -> Report {
        self.fail_rest("the kit did not reach this clause");
        Report {
            driver_type,
            verdicts: self.verdicts,
        }
    }
}
