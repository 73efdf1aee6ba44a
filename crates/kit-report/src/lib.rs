//! The one vocabulary of the workspace's conformance kits.
//!
//! Three kits check implementations of the SDK's three extension traits: run-service
//! providers (`run_service::conformance`, clauses `RS-*`), thread stores
//! (`thread_store::conformance`, `TS-*`) and drivers (`driver_spi::conformance`, `DSC-*`,
//! `SES-*`, ...). Each has the same shape:
//!
//! - a `Factory` trait the implementer writes, which makes the thing under test;
//! - a `Clause` enum naming every clause, declared with [`clauses!`], which implements
//!   [`Clause`];
//! - `run(&factory) -> Report`, which judges every clause and never stops at the first failure;
//! - one assert, [`Report::assert_passed`], which panics naming every clause that did not pass.
//!
//! This crate holds the shared part: the [`Clause`] trait, the [`Verdict`], the [`Report`] and
//! the [`Recorder`] a kit fills while it runs.
//!
//! ```
//! use kit_report::{Clause, Recorder, Report, Verdict};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
//! enum Demo { One, Two }
//!
//! impl Clause for Demo {
//!     const KIT: &'static str = "demo";
//!     const ALL: &'static [Self] = &[Demo::One, Demo::Two];
//!     fn id(self) -> &'static str { match self { Demo::One => "D-01", Demo::Two => "D-02" } }
//!     fn summary(self) -> &'static str { "a demo clause" }
//! }
//!
//! let mut recorder = Recorder::new();
//! recorder.pass(Demo::One);
//! recorder.fail(Demo::Two, "it broke");
//! let report: Report<Demo> = recorder.finish("my-impl");
//! assert_eq!(report.failures(), vec![Demo::Two]);
//! assert!(matches!(report.verdict(Demo::One), Verdict::Passed));
//! assert!(std::panic::catch_unwind(|| report.assert_passed()).is_err());
//! ```
//!
//! Invariants: a report holds a verdict for every clause of [`Clause::ALL`]; a clause the kit
//! never judged is *failed* ("not checked"), never passed, so a kit that stops early fails
//! closed. A failure beats a pass, a pass beats a skip, and the first failure message is kept.
//! A skip is never a pass: [`Report::assert_passed`] refuses skips too.
//!
//! What it does not do: it runs nothing and knows no clause; it does not catch panics or time
//! out (each kit and the test harness do). Verdict messages are the kits' own text, which never
//! holds a secret value.
//!
//! Stability: pre-1.0, the API may change in any release.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fmt;

/// One kit's set of named clauses, usually a fieldless enum.
pub trait Clause: Copy + Ord + fmt::Debug + Send + Sync + 'static {
    /// The kit's name, as the report's panics print it (`"driver"`, `"thread-store"`, ...).
    const KIT: &'static str;
    /// Every clause, in report order.
    const ALL: &'static [Self];
    /// The stable clause id, for example `TS-07`.
    fn id(self) -> &'static str;
    /// One line saying what the clause requires.
    fn summary(self) -> &'static str;
}

/// Declares a kit's clause enum: the variants with their ids and summaries, `ALL`, `id`,
/// `summary`, `Display` (the id) and the [`Clause`] impl, so that a kit lists each clause once.
///
/// ```
/// kit_report::clauses! {
///     /// The clauses of a demo kit.
///     pub enum Demo in "demo" {
///         /// D-01: the first clause.
///         D01 = "D-01": "the first clause holds",
///         /// D-02: the second clause.
///         D02 = "D-02": "the second clause holds",
///     }
/// }
///
/// assert_eq!(Demo::ALL, &[Demo::D01, Demo::D02]);
/// assert_eq!(Demo::D02.id(), "D-02");
/// assert_eq!(Demo::D01.to_string(), "D-01");
/// assert_eq!(<Demo as kit_report::Clause>::KIT, "demo");
/// ```
#[macro_export]
macro_rules! clauses {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident in $kit:literal {
            $( $(#[$variant_meta:meta])* $variant:ident = $id:literal : $summary:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant, )+
        }

        impl $name {
            /// Every clause, in report order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The stable clause id.
            pub fn id(self) -> &'static str {
                match self { $( $name::$variant => $id, )+ }
            }

            /// One line saying what the clause requires.
            pub fn summary(self) -> &'static str {
                match self { $( $name::$variant => $summary, )+ }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.id())
            }
        }

        impl $crate::Clause for $name {
            const KIT: &'static str = $kit;
            const ALL: &'static [$name] = $name::ALL;

            fn id(self) -> &'static str {
                $name::id(self)
            }

            fn summary(self) -> &'static str {
                $name::summary(self)
            }
        }
    };
}

/// The verdict on one clause.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every check of the clause held.
    Passed,
    /// A check failed; the message says which (never a secret value).
    Failed(String),
    /// The clause was not checked, visibly, for the reason given: the implementation does not
    /// declare what the clause covers, or the factory does not expose what it needs.
    Skipped(String),
}

/// The result of one kit run: a verdict for every clause of `C`.
#[derive(Debug, Clone)]
pub struct Report<C: Clause> {
    subject: String,
    verdicts: BTreeMap<C, Verdict>,
}

impl<C: Clause> Report<C> {
    /// What was checked: the driver type, the store or the provider the factory named.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The verdict on a clause.
    pub fn verdict(&self, clause: C) -> &Verdict {
        self.verdicts.get(&clause).unwrap_or(&NOT_CHECKED)
    }

    /// Every clause with its verdict, in report order.
    pub fn verdicts(&self) -> impl Iterator<Item = (C, &Verdict)> {
        C::ALL.iter().map(|c| (*c, self.verdict(*c)))
    }

    /// Whether the clause failed.
    pub fn failed(&self, clause: C) -> bool {
        matches!(self.verdict(clause), Verdict::Failed(_))
    }

    /// The failed clauses, in report order.
    pub fn failures(&self) -> Vec<C> {
        self.verdicts()
            .filter(|(_, v)| matches!(v, Verdict::Failed(_)))
            .map(|(c, _)| c)
            .collect()
    }

    /// The skipped clauses, in report order.
    pub fn skipped(&self) -> Vec<C> {
        self.verdicts()
            .filter(|(_, v)| matches!(v, Verdict::Skipped(_)))
            .map(|(c, _)| c)
            .collect()
    }

    /// Whether every clause passed: none failed and none was skipped.
    pub fn passed(&self) -> bool {
        self.verdicts().all(|(_, v)| *v == Verdict::Passed)
    }

    /// The one assert: panics unless every clause passed, naming each failed or skipped clause
    /// id, with the whole report below.
    ///
    /// A skip is refused too: a test that accepts a skip names it with
    /// [`Report::assert_passed_except`], so that the skip is written down where it is accepted.
    #[track_caller]
    pub fn assert_passed(&self) {
        self.assert_passed_except(&[]);
    }

    /// [`assert_passed`](Report::assert_passed) with the accepted skips written down: panics
    /// unless every clause passed except exactly the `accepted_skips`, which were skipped. A
    /// skip not listed fails, and so does a listed clause that was not skipped (it passed or
    /// failed), so the list cannot go stale.
    ///
    /// ```
    /// kit_report::clauses! {
    ///     /// Clauses of a demo kit.
    ///     pub enum Demo in "demo" {
    ///         /// Always checked.
    ///         A = "DEMO-01": "checked",
    ///         /// Needs a capability the subject does not claim.
    ///         B = "DEMO-02": "optional",
    ///     }
    /// }
    /// let mut recorder = kit_report::Recorder::new();
    /// recorder.pass(Demo::A);
    /// recorder.skip(Demo::B, "capability not claimed");
    /// let report = recorder.finish("subject");
    /// report.assert_passed_except(&[Demo::B]);
    /// ```
    #[track_caller]
    pub fn assert_passed_except(&self, accepted_skips: &[C]) {
        let skipped = self.skipped();
        let unexpected: Vec<C> = skipped
            .iter()
            .copied()
            .filter(|c| !accepted_skips.contains(c))
            .collect();
        let stale: Vec<C> = accepted_skips
            .iter()
            .copied()
            .filter(|c| !skipped.contains(c))
            .collect();
        if self.failures().is_empty() && unexpected.is_empty() && stale.is_empty() {
            return;
        }
        let ids = |clauses: Vec<C>| {
            clauses
                .iter()
                .map(|c| c.id())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let failed = self.failures();
        let mut message = format!("{} conformance of `{}`:", C::KIT, self.subject);
        if !failed.is_empty() {
            message.push_str(&format!(" fails clauses {}", ids(failed)));
        }
        if !unexpected.is_empty() {
            message.push_str(&format!(" skipped clauses {}", ids(unexpected)));
        }
        if !stale.is_empty() {
            message.push_str(&format!(
                " did not skip the accepted clauses {}",
                ids(stale)
            ));
        }
        panic!("{message}\n{self}");
    }
}

static NOT_CHECKED: Verdict = Verdict::Failed(String::new());

impl<C: Clause> fmt::Display for Report<C> {
    /// One line per clause, `PASS|FAIL|SKIP <id> <summary>[: <detail>]`, then a tally.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for (clause, verdict) in self.verdicts() {
            let (id, summary) = (clause.id(), clause.summary());
            match verdict {
                Verdict::Passed => {
                    passed += 1;
                    writeln!(f, "PASS {id} {summary}")?
                }
                Verdict::Failed(why) => {
                    failed += 1;
                    let why = if why.is_empty() { "not checked" } else { why };
                    writeln!(f, "FAIL {id} {summary}: {why}")?
                }
                Verdict::Skipped(why) => {
                    skipped += 1;
                    writeln!(f, "SKIP {id} {summary}: {why}")?
                }
            }
        }
        write!(f, "{passed} passed, {failed} failed, {skipped} skipped")
    }
}

/// Collects verdicts while a kit runs, then [`finish`](Recorder::finish)es into a [`Report`].
///
/// A failure beats a pass, a pass beats a skip, and the first failure message is kept, so a
/// kit may judge one clause from several checks.
#[derive(Debug)]
pub struct Recorder<C: Clause> {
    verdicts: BTreeMap<C, Verdict>,
}

impl<C: Clause> Default for Recorder<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Clause> Recorder<C> {
    /// A recorder with no verdict yet.
    pub fn new() -> Self {
        Self {
            verdicts: BTreeMap::new(),
        }
    }

    /// Records that a check of `clause` held.
    pub fn pass(&mut self, clause: C) {
        match self.verdicts.get(&clause) {
            Some(Verdict::Failed(_) | Verdict::Passed) => {}
            _ => {
                self.verdicts.insert(clause, Verdict::Passed);
            }
        }
    }

    /// Records that a check of `clause` failed, and why.
    pub fn fail(&mut self, clause: C, why: impl Into<String>) {
        if !matches!(self.verdicts.get(&clause), Some(Verdict::Failed(_))) {
            self.verdicts.insert(clause, Verdict::Failed(why.into()));
        }
    }

    /// Records that `clause` was not checked, and why, unless it was judged already.
    pub fn skip(&mut self, clause: C, why: impl Into<String>) {
        self.verdicts
            .entry(clause)
            .or_insert_with(|| Verdict::Skipped(why.into()));
    }

    /// Records `Ok` as a pass and `Err` as a failure.
    pub fn check(&mut self, clause: C, result: Result<(), String>) {
        match result {
            Ok(()) => self.pass(clause),
            Err(why) => self.fail(clause, why),
        }
    }

    /// Marks every clause not judged yet as failed with this reason (fail closed).
    pub fn fail_rest(&mut self, why: &str) {
        for clause in C::ALL {
            self.verdicts
                .entry(*clause)
                .or_insert_with(|| Verdict::Failed(format!("not checked: {why}")));
        }
    }

    /// The report on `subject`. A clause never judged fails as not reached.
    pub fn finish(mut self, subject: impl Into<String>) -> Report<C> {
        self.fail_rest("the kit did not reach this clause");
        Report {
            subject: subject.into(),
            verdicts: self.verdicts,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum T {
        A,
        B,
        C,
    }

    impl Clause for T {
        const KIT: &'static str = "test";
        const ALL: &'static [Self] = &[T::A, T::B, T::C];
        fn id(self) -> &'static str {
            match self {
                T::A => "T-01",
                T::B => "T-02",
                T::C => "T-03",
            }
        }
        fn summary(self) -> &'static str {
            "clause"
        }
    }

    #[test]
    fn failure_beats_pass_and_pass_beats_skip() {
        let mut r = Recorder::new();
        r.pass(T::A);
        r.fail(T::A, "first");
        r.fail(T::A, "second");
        r.pass(T::A);
        r.skip(T::B, "why");
        r.pass(T::B);
        r.skip(T::B, "again");
        let report = r.finish("x");
        assert_eq!(report.verdict(T::A), &Verdict::Failed("first".into()));
        assert_eq!(report.verdict(T::B), &Verdict::Passed);
        // Never judged: failed, not passed.
        assert!(report.failed(T::C));
        assert_eq!(report.failures(), vec![T::A, T::C]);
    }

    #[test]
    fn the_assert_names_failed_and_skipped_ids() {
        let mut r = Recorder::new();
        r.pass(T::A);
        r.fail(T::B, "broke");
        r.skip(T::C, "not declared");
        let report = r.finish("impl-x");
        assert!(!report.passed());
        let panic = std::panic::catch_unwind(|| report.assert_passed()).unwrap_err();
        let text = panic.downcast_ref::<String>().unwrap();
        assert!(text.contains("fails clauses T-02"), "{text}");
        assert!(text.contains("skipped clauses T-03"), "{text}");
        assert!(text.contains("`impl-x`"), "{text}");
        assert!(text.ends_with("1 passed, 1 failed, 1 skipped"), "{text}");
    }

    #[test]
    fn all_passed_does_not_panic() {
        let mut r = Recorder::new();
        for c in T::ALL {
            r.pass(*c);
        }
        let report = r.finish("ok");
        assert!(report.passed());
        report.assert_passed();
        assert!(report.to_string().contains("PASS T-03 clause"));
    }

    fn panic_text(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let panic = std::panic::catch_unwind(f).unwrap_err();
        panic.downcast_ref::<String>().unwrap().clone()
    }

    #[test]
    fn accepted_skips_must_be_exactly_the_skips() {
        let mut r = Recorder::new();
        r.pass(T::A);
        r.skip(T::B, "not claimed");
        r.skip(T::C, "not claimed either");
        let report = r.finish("impl-y");
        report.assert_passed_except(&[T::B, T::C]);
        // A skip nobody accepted fails.
        let text = panic_text(|| report.assert_passed_except(&[T::B]));
        assert!(text.contains("skipped clauses T-03"), "{text}");
        assert!(!text.contains("T-02,"), "{text}");
        // An accepted skip of a clause that passed is stale, and fails.
        let text = panic_text(|| report.assert_passed_except(&[T::A, T::B, T::C]));
        assert!(
            text.contains("did not skip the accepted clauses T-01"),
            "{text}"
        );
        // Failures fail whatever is accepted.
        let mut r = Recorder::new();
        r.fail(T::A, "broke");
        r.skip(T::B, "not claimed");
        r.pass(T::C);
        let report = r.finish("impl-z");
        let text = panic_text(|| report.assert_passed_except(&[T::A, T::B]));
        assert!(text.contains("fails clauses T-01"), "{text}");
    }
}
