//! Component breakdowns: roots, diffs, names and serialization.

use compat_fingerprint::{
    Breakdown, BreakdownError, Change, ComponentName, ComponentNameError, Fingerprint, Kind,
    ShortDigest,
};

const KIND: Kind = Kind::new("agent-sdk 2026-11-30 compat-fingerprint breakdown-test v1");

fn digest(s: &str) -> Fingerprint {
    Fingerprint::of(KIND, |e| {
        e.str(s);
    })
}

fn name(s: &str) -> ComponentName {
    ComponentName::new(s).unwrap()
}

#[test]
fn diff_names_each_changed_component() {
    let old: Breakdown = [
        (name("model"), digest("m1")),
        (name("driver"), digest("d")),
        (name("skills"), digest("s")),
    ]
    .into_iter()
    .collect();
    let new: Breakdown = [
        (name("model"), digest("m2")),
        (name("driver"), digest("d")),
        (name("workspace"), digest("w")),
    ]
    .into_iter()
    .collect();
    let diff = old.diff(&new);
    let got: Vec<(&str, Change)> = diff.iter().map(|c| (c.name.as_str(), c.change)).collect();
    assert_eq!(
        got,
        [
            ("model", Change::Changed),
            ("skills", Change::Removed),
            ("workspace", Change::Added)
        ]
    );
    assert!(old.diff(&old).is_empty());
    assert_ne!(old.root(KIND), new.root(KIND));
    assert_eq!(diff[0].to_string(), "model changed");
}

#[test]
fn root_ignores_insertion_order_and_depends_on_names() {
    let mut a = Breakdown::new();
    a.insert(name("a"), digest("1")).unwrap();
    a.insert(name("b"), digest("2")).unwrap();
    let mut b = Breakdown::new();
    b.insert(name("b"), digest("2")).unwrap();
    b.insert(name("a"), digest("1")).unwrap();
    assert_eq!(a.root(KIND), b.root(KIND));
    let renamed: Breakdown = [(name("a"), digest("1")), (name("c"), digest("2"))]
        .into_iter()
        .collect();
    assert_ne!(a.root(KIND), renamed.root(KIND));
}

#[test]
fn duplicate_insert_is_an_error_and_changes_nothing() {
    let mut a = Breakdown::new();
    a.insert(name("a"), digest("1")).unwrap();
    let err = a.insert(name("a"), digest("2")).unwrap_err();
    assert_eq!(err, BreakdownError::Duplicate { name: name("a") });
    assert_eq!(a.get(&name("a")), Some(digest("1")));
}

#[test]
fn component_names_are_validated_without_echoing_input() {
    assert_eq!(ComponentName::new(""), Err(ComponentNameError::Empty));
    assert_eq!(
        ComponentName::new("x".repeat(65)),
        Err(ComponentNameError::TooLong { len: 65 })
    );
    assert_eq!(
        ComponentName::new("Model"),
        Err(ComponentNameError::BadCharacter { position: 0 })
    );
    assert_eq!(
        ComponentName::new("1abc"),
        Err(ComponentNameError::BadCharacter { position: 0 })
    );
    let err = ComponentName::new("mcp:sk-CANARY").unwrap_err();
    assert!(!err.to_string().contains("CANARY"));
    let d = ShortDigest::of_str("com.example.agent-ui");
    let n = ComponentName::with_digest("attachment", d).unwrap();
    assert_eq!(n.as_str(), format!("attachment:{d}"));
    assert!(!n.as_str().contains("example"));
}

#[test]
fn breakdown_round_trips_through_json_and_rejects_bad_names() {
    let b: Breakdown = [
        (name("model"), digest("m")),
        (name("attachment:0123456789ab"), digest("x")),
    ]
    .into_iter()
    .collect();
    let json = serde_json::to_string(&b).unwrap();
    assert!(json.contains("\"model\":\"b3:"));
    assert_eq!(serde_json::from_str::<Breakdown>(&json).unwrap(), b);
    let bad = json.replace("model", "Model");
    assert!(serde_json::from_str::<Breakdown>(&bad).is_err());
}

#[test]
fn short_digests_differ_and_hide_the_value() {
    let a = ShortDigest::of_str("tenant-a");
    let b = ShortDigest::of_str("tenant-b");
    assert_ne!(a, b);
    assert_eq!(a, ShortDigest::of_str("tenant-a"));
    assert!(!format!("{a} {a:?}").contains("tenant"));
}
