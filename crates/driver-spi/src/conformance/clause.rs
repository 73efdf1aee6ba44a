//! The clauses of the driver contract.

kit_report::clauses! {
    /// One named clause of the driver contract. Every failure names its clause id
    /// ([`Clause::id`], for example `SES-06`).
    pub enum Clause in "driver" {
        /// DSC-01: the descriptor's type and display name are non-empty and trimmed.
        Dsc01 = "DSC-01": "descriptor type and display name are non-empty and trimmed",
        /// DSC-02: the descriptor is deterministic across calls and instances.
        Dsc02 = "DSC-02": "descriptor is deterministic across calls and instances",
        /// CFG-01: `validate_config` accepts the factory's config without panicking.
        Cfg01 = "CFG-01": "validate_config accepts the factory's config",
        /// CAP-01: resume is declared iff a stable session codec and a config fingerprinter exist.
        Cap01 = "CAP-01": "resume is declared iff a stable session codec and a config fingerprinter exist",
        /// CAP-02: the config fingerprint is stable across calls and instances, and non-empty.
        Cap02 = "CAP-02": "config fingerprint is stable and non-empty",
        /// CAP-03: persistent processes are declared iff a process lifecycle exists.
        Cap03 = "CAP-03": "persistent processes are declared iff a process lifecycle exists",
        /// CAP-04: fork is declared only together with resume.
        Cap04 = "CAP-04": "fork is declared only together with resume",
        /// CAP-05: pre-warm is declared iff the driver pre-warms (one that does not refuses with
        /// `Unsupported::Prewarm` and starts nothing), and only with persistent processes.
        Cap05 = "CAP-05": "pre-warm is declared iff the driver pre-warms, and only with persistent processes",
        /// SES-01: the codec name is non-empty and stable.
        Ses01 = "SES-01": "codec name is non-empty and stable",
        /// SES-02: nil or empty codec input never panics, and `None` maps to `None`.
        Ses02 = "SES-02": "codec: nil or empty input never panics; None maps to None",
        /// SES-03: the codec round trip is lossless.
        Ses03 = "SES-03": "codec: round trip is lossless",
        /// SES-04: the guard fingerprint is deterministic.
        Ses04 = "SES-04": "codec: guard fingerprint is deterministic",
        /// SES-05: the guard fingerprint changes when any guard value changes.
        Ses05 = "SES-05": "codec: guard fingerprint changes when any guard value changes",
        /// SES-06: the guard follows the profile's session-compatibility fingerprint, not the
        /// exact one.
        Ses06 = "SES-06": "guard follows the session-compatibility fingerprint, not the exact one",
        /// EVT-01: exactly one run-started event, first.
        Evt01 = "EVT-01": "events: exactly one run-started, first",
        /// EVT-02: exactly one terminal event.
        Evt02 = "EVT-02": "events: exactly one terminal event",
        /// EVT-03: nothing after the terminal event.
        Evt03 = "EVT-03": "events: nothing after the terminal event",
        /// EVT-04: deltas are non-empty; tool-call lifecycles open once and close.
        Evt04 = "EVT-04": "events: non-empty deltas; tool-call lifecycles open once and close",
        /// EVT-05: the terminal event agrees with the outcome.
        Evt05 = "EVT-05": "events: the terminal event agrees with the outcome",
        /// RSP-01: a valid checkpoint requires a clean outcome and a resume id.
        Rsp01 = "RSP-01": "response: a valid checkpoint requires a clean outcome and a resume id",
        /// RSP-02: a clean session turn yields a valid checkpoint that round-trips through the
        /// codec.
        Rsp02 = "RSP-02": "response: a clean session turn yields a valid, round-tripping checkpoint",
        /// RSP-03: a fork yields a new resume id.
        Rsp03 = "RSP-03": "response: a fork yields a new resume id",
        /// CUR-01: a resumed turn materializes the current MCP URL, env-var name and secret, and
        /// none of the old ones.
        Cur01 = "CUR-01": "current request: a resumed turn materializes the new endpoint and secret only",
        /// POL-01: an action the policy allows runs without an approval request.
        Pol01 = "POL-01": "policy: an allowed action runs without asking",
        /// POL-02: an action the policy denies never runs and never asks.
        Pol02 = "POL-02": "policy: a denied action never runs and never asks",
        /// POL-03: a policy that asks is served (an approval request arrives) when approvals are
        /// declared, and refused as unsupported before any event when they are not.
        Pol03 = "POL-03": "policy: asking is served iff approvals are declared",
        /// APR-01: an approved request is resolved once as approved and the action runs.
        Apr01 = "APR-01": "approvals: approved once, the action runs",
        /// APR-02: a denied request is resolved once as denied and the action does not run.
        Apr02 = "APR-02": "approvals: denied once, the action does not run",
        /// APR-03: an answer stands in for the tool where answerable, and is refused otherwise.
        Apr03 = "APR-03": "approvals: an answer stands in for the tool, or is refused",
        /// APR-04: an unanswered request is denied at the timeout; a late answer is refused.
        Apr04 = "APR-04": "approvals: timeout denies; a late answer is refused",
        /// APR-05: a second answer is refused and the first stands.
        Apr05 = "APR-05": "approvals: a second answer is refused",
        /// APR-06: after the run is cancelled, an answer is refused and the action does not run.
        Apr06 = "APR-06": "approvals: an answer after cancellation is refused",
        /// APR-07: no secret value reaches an approval request or event in clear.
        Apr07 = "APR-07": "approvals: no secret in requests or events",
        /// STR-01: a follow-up sent into a running turn is acknowledged, shown once redacted, and
        /// the turn stays clean, when steer is declared; refused typed, never acknowledged and
        /// never shown, when it is not.
        Str01 = "STR-01": "steering: a follow-up is delivered iff steer is declared, else refused typed",
        /// PRC-01: closing processes is idempotent and the driver runs again afterwards.
        Prc01 = "PRC-01": "processes: close is idempotent and the driver runs again afterwards",
        /// PRC-02: no live process remains after close.
        Prc02 = "PRC-02": "processes: no live process remains after close",
        /// PRW-01: a pre-warm then a run of the same request: the run takes the pre-warmed
        /// process (no second one starts).
        Prw01 = "PRW-01": "pre-warm: the next run of the request takes the pre-warmed process",
        /// PRW-02: a pre-warm the run would refuse fails with the run's error, before any
        /// process starts.
        Prw02 = "PRW-02": "pre-warm: a refused pre-warm errors as the run does, before any process starts",
    }
}
