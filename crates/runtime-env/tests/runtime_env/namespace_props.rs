//! Namespace and session-id validation: the injectivity and containment properties, and the
//! rejection of traversal, NUL and over-long input.

use std::path::{Component, Path};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use runtime_env::LAYOUT_VARS;
use runtime_env::{CredentialNamespace, IsolationLevel, SessionId};

use crate::support::Sandbox;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x5eed_0003),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

const NS_REGEX: &str = "[a-z][a-z0-9_-]{0,31}(:[A-Za-z0-9_@+-][A-Za-z0-9._@+-]{0,95})?";

/// Valid namespaces, biased toward near-collisions (same kind, ids differing in case).
fn namespace() -> impl Strategy<Value = CredentialNamespace> {
    prop_oneof![
        proptest::string::string_regex(NS_REGEX).unwrap(),
        proptest::string::string_regex("(user|ci):[aAbB_@+-][aAbB._@+-]{0,3}").unwrap(),
        proptest::string::string_regex("[ab]{1,2}(:[ab]{1,2})?").unwrap(),
    ]
    .prop_map(|s| CredentialNamespace::new(&s).unwrap())
}

fn single_normal_component(name: &str) -> bool {
    let comps: Vec<_> = Path::new(name).components().collect();
    comps.len() == 1 && matches!(comps[0], Component::Normal(c) if c == name)
}

proptest! {
    #![proptest_config(config(2048))]

    /// Distinct valid namespaces never map to the same directory, even when the file system
    /// ignores case.
    #[test]
    fn distinct_namespaces_never_share_a_directory(a in namespace(), b in namespace()) {
        prop_assume!(a != b);
        prop_assert_ne!(a.dir_name(), b.dir_name());
        prop_assert_ne!(a.dir_name().to_lowercase(), b.dir_name().to_lowercase());
    }

    /// Whatever the input, it is either rejected or maps to one plain path component that is
    /// not hidden, not `.`/`..`, and fits NAME_MAX.
    #[test]
    fn any_string_is_rejected_or_one_safe_component(s in "\\PC{0,140}|[a-z./:\\\\\0-]{0,12}") {
        if let Ok(ns) = CredentialNamespace::new(&s) {
            let d = ns.dir_name();
            prop_assert!(single_normal_component(&d), "{d:?}");
            prop_assert!(!d.starts_with('.'));
            prop_assert!(d.len() <= 255);
        }
        if let Ok(id) = SessionId::new(&s) {
            let d = id.dir_name();
            prop_assert!(single_normal_component(&d), "{d:?}");
            prop_assert!(!d.starts_with('.'));
        }
    }

    #[test]
    fn distinct_session_ids_never_share_a_directory(
        a in "[A-Za-z0-9_-][A-Za-z0-9._-]{0,8}",
        b in "[A-Za-z0-9_-][A-Za-z0-9._-]{0,8}",
    ) {
        prop_assume!(a != b);
        let (a, b) = (SessionId::new(&a).unwrap(), SessionId::new(&b).unwrap());
        prop_assert_ne!(a.dir_name().to_lowercase(), b.dir_name().to_lowercase());
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Every path a built environment exports stays under the base directory, for namespaced
    /// and ephemeral levels alike.
    #[test]
    fn every_resolved_path_stays_under_the_base(ns in namespace(), sid in "[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}") {
        let sb = Sandbox::new();
        let base = sb.base();
        for level in [IsolationLevel::Namespaced, IsolationLevel::Ephemeral(SessionId::new(&sid).unwrap())] {
            let env = sb.builder(ns.as_str()).level(level).build().unwrap();
            let root = env.root().unwrap().to_owned();
            let canon_base = base.canonicalize().unwrap();
            prop_assert!(root.canonicalize().unwrap().starts_with(&canon_base));
            prop_assert!(!root.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)));
            let path_vars = LAYOUT_VARS
                .iter()
                .map(|(v, _)| *v)
                .chain(crate::support::all_runtimes().map(|d| d.state_var));
            for name in path_vars {
                let v = env.child_env().get(name).unwrap();
                let p = Path::new(v);
                prop_assert!(p.is_absolute(), "{name}");
                prop_assert!(p.starts_with(&root), "{name} = {}", p.display());
                prop_assert!(p.canonicalize().unwrap().starts_with(&canon_base), "{name}");
            }
        }
    }
}

#[test]
fn traversal_nul_and_overlong_input_are_rejected() {
    let long = "a".repeat(4096);
    let long_id = format!("user:{}", "x".repeat(97));
    for bad in [
        "",
        ".",
        "..",
        "a/../b",
        "../x",
        "user:..",
        "user:../x",
        "user:a/b",
        "user:a\\b",
        "user:a\0b",
        "\0",
        "user:a\nb",
        "user:\u{1b}",
        "user:é",
        &long,
        &long_id,
    ] {
        let err = CredentialNamespace::new(bad).expect_err(bad);
        assert!(
            err.to_string().starts_with("invalid credential namespace"),
            "{err}"
        );
    }
    for bad in ["", ".", "..", "../../x", "a/../b", "a\0", &"s".repeat(65)] {
        let err = SessionId::new(bad).expect_err(bad);
        assert!(err.to_string().starts_with("invalid session id"), "{err}");
    }
}

/// The collision codesdk's sanitizer had (`user:abc/def` and `user_abc_def` shared a
/// directory): the first is now rejected, the second is valid and distinct from `user:abc_def`.
#[test]
fn sanitizer_collision_cannot_happen() {
    assert!(CredentialNamespace::new("user:abc/def").is_err());
    let a = CredentialNamespace::new("user_abc_def").unwrap();
    let b = CredentialNamespace::new("user:abc_def").unwrap();
    assert_ne!(a.dir_name(), b.dir_name());
}
