//! Session guard rule, guard fingerprints and the reference codec's laws.

use driver_spi::reference::ReferenceCodec;
use driver_spi::{
    CodecError, ResumeRejectReason, SessionCodec, SessionContext, SessionGuard, SessionParams,
    SessionState, guard_fingerprint,
};
use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::{FIRST, SECOND, profile, request};

fn stored_guard_of(exact: &str, session: &str, workspace: Option<&str>) -> SessionState {
    let mut r = request(
        "r1",
        &FIRST,
        SessionContext::start(),
        profile(exact, session),
    );
    r.workspace = workspace.map(str::to_owned);
    let mut state = SessionState::new("s-1");
    SessionGuard::for_request(&r).write_to(&mut state);
    state
}

#[test]
fn guard_accepts_an_endpoint_rotation_and_rejects_a_semantic_change() {
    let stored = stored_guard_of("exact-port-4101", "semantic-v1", Some("/work/space"));

    // New port, token and env-var name: the exact fingerprint changes, the session one not.
    let rotated = request(
        "r2",
        &SECOND,
        SessionContext::continue_only(stored.clone()),
        profile("exact-port-4202", "semantic-v1"),
    );
    assert_eq!(SessionGuard::for_request(&rotated).check(&stored), Ok(()));

    // A semantic change is rejected, whatever the exact fingerprint.
    for exact in ["exact-port-4101", "exact-port-4202"] {
        let changed = request(
            "r3",
            &SECOND,
            SessionContext::continue_only(stored.clone()),
            profile(exact, "semantic-v2"),
        );
        assert_eq!(
            SessionGuard::for_request(&changed).check(&stored),
            Err(ResumeRejectReason::GuardMismatch)
        );
    }

    // Another workspace is rejected too.
    let moved = rotated.clone().with_workspace("/elsewhere");
    assert_eq!(
        SessionGuard::for_request(&moved).check(&stored),
        Err(ResumeRejectReason::GuardMismatch)
    );
}

#[test]
fn guard_fails_closed_on_missing_values() {
    let r = request("r1", &FIRST, SessionContext::start(), profile("e", "s"));
    let guard = SessionGuard::for_request(&r);
    assert_eq!(
        guard.check(&SessionState::new("s-1")),
        Err(ResumeRejectReason::GuardMismatch)
    );
    let mut partial = SessionState::new("s-1");
    guard.write_to(&mut partial);
    partial.data.remove(SessionGuard::WORKSPACE_KEY);
    assert_eq!(
        guard.check(&partial),
        Err(ResumeRejectReason::GuardMismatch)
    );
}

#[test]
fn guard_stores_the_session_compatibility_fingerprint_not_the_exact_one() {
    let r = request(
        "r1",
        &FIRST,
        SessionContext::start(),
        profile("exact", "session"),
    );
    let mut state = SessionState::new("s-1");
    SessionGuard::for_request(&r).write_to(&mut state);
    let stored = &state.data[SessionGuard::PROFILE_KEY];
    assert_eq!(stored, &r.profile.session_compatibility.to_string());
    assert_ne!(stored, &r.profile.exact.to_string());
    assert_eq!(
        SessionGuard::KEYS,
        &[SessionGuard::PROFILE_KEY, SessionGuard::WORKSPACE_KEY]
    );
}

#[test]
fn guard_fingerprint_is_deterministic_and_sensitive_to_each_guarded_value() {
    let params = SessionParams::new(
        "s-1",
        "S 1",
        [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "2".to_owned()),
            ("other".to_owned(), "x".to_owned()),
        ]
        .into(),
    );
    let keys = ["a", "b"];
    let base = guard_fingerprint("codec/v1", &keys, &params);
    assert_eq!(base, guard_fingerprint("codec/v1", &["b", "a"], &params));
    assert_ne!(base, guard_fingerprint("codec/v2", &keys, &params));
    for key in keys {
        let mut changed = params.clone();
        changed.data.insert(key.to_owned(), "changed".to_owned());
        assert_ne!(base, guard_fingerprint("codec/v1", &keys, &changed));
        let mut removed = params.clone();
        removed.data.remove(key);
        assert_ne!(base, guard_fingerprint("codec/v1", &keys, &removed));
    }
    // Unguarded data, the resume id and the display id do not count.
    let mut other = params.clone();
    other.data.insert("other".to_owned(), "y".to_owned());
    other.resume_id = "s-2".to_owned();
    other.display_id = "S 2".to_owned();
    assert_eq!(base, guard_fingerprint("codec/v1", &keys, &other));
    // An empty value differs from a missing one.
    let mut empty = params.clone();
    empty.data.insert("a".to_owned(), String::new());
    let mut missing = params.clone();
    missing.data.remove("a");
    assert_ne!(
        guard_fingerprint("codec/v1", &keys, &empty),
        guard_fingerprint("codec/v1", &keys, &missing)
    );
}

#[test]
fn reference_codec_handles_nil_empty_and_malformed_input() {
    let codec = ReferenceCodec;
    assert_eq!(codec.name(), "reference/v1");
    assert_eq!(codec.to_params(None), Ok(None));
    assert_eq!(codec.from_params(None), Ok(None));
    assert_eq!(
        codec.to_params(Some(&SessionState::new(""))),
        Err(CodecError::MissingResumeId)
    );
    assert_eq!(
        codec.to_params(Some(&SessionState::new(" \t"))),
        Err(CodecError::MissingResumeId)
    );
    assert_eq!(
        codec.from_params(Some(&SessionParams::default())),
        Err(CodecError::MissingResumeId)
    );
    assert_eq!(
        codec.to_params(Some(&SessionState::new("bad\nid"))),
        Err(CodecError::InvalidResumeId { len: 6 })
    );
    let long = "x".repeat(257);
    assert_eq!(
        codec.to_params(Some(&SessionState::new(long))),
        Err(CodecError::InvalidResumeId { len: 257 })
    );
    // Does not panic on empty params.
    let _ = codec.guard_fingerprint(&SessionParams::default());
    assert_eq!(codec.guard_keys(), SessionGuard::KEYS);
}

#[test]
fn reference_codec_fills_the_display_id() {
    let codec = ReferenceCodec;
    let params = codec
        .to_params(Some(&SessionState::new("s-1")))
        .unwrap()
        .unwrap();
    assert_eq!(params.display_id, "s-1");
    let blank = SessionState::new("s-1").with_display_id("  ");
    assert_eq!(
        codec.to_params(Some(&blank)).unwrap().unwrap().display_id,
        "s-1"
    );
}

fn config() -> Config {
    test_support::proptest_config(test_support::PROPERTY_CASES, 0x0d21_7e55)
}

fn state() -> impl Strategy<Value = SessionState> {
    (
        "[a-zA-Z0-9_.:-]{1,40}",
        proptest::option::of(".{0,20}"),
        prop::collection::btree_map("[a-z.]{1,12}", ".{0,16}", 0..6),
    )
        .prop_map(|(resume_id, display_id, data)| {
            let mut state = SessionState::new(resume_id);
            state.display_id = display_id;
            state.data = data;
            state
        })
}

proptest! {
    #![proptest_config(config())]

    /// to_params(from_params(p)) == p, and the resume id and data survive both ways.
    #[test]
    fn reference_codec_round_trip_is_lossless(state in state()) {
        let codec = ReferenceCodec;
        let p1 = codec.to_params(Some(&state)).unwrap().unwrap();
        prop_assert_eq!(&p1.resume_id, &state.resume_id);
        prop_assert_eq!(&p1.data, &state.data);
        prop_assert!(!p1.display_id.trim().is_empty());
        let s2 = codec.from_params(Some(&p1)).unwrap().unwrap();
        prop_assert_eq!(&s2.resume_id, &state.resume_id);
        prop_assert_eq!(&s2.data, &state.data);
        let p2 = codec.to_params(Some(&s2)).unwrap().unwrap();
        prop_assert_eq!(&p2, &p1);
        prop_assert_eq!(codec.guard_fingerprint(&p1), codec.guard_fingerprint(&p2));
    }

    /// Arbitrary params never panic the codec.
    #[test]
    fn reference_codec_never_panics(resume_id in ".{0,300}", display_id in ".{0,10}") {
        let codec = ReferenceCodec;
        let params = SessionParams::new(resume_id.clone(), display_id, Default::default());
        let _ = codec.from_params(Some(&params));
        let _ = codec.to_params(Some(&SessionState::new(resume_id)));
        let _ = codec.guard_fingerprint(&params);
    }
}
