//! The two ways a host without a `schemars` dependency derives `agent::JsonSchema`: the
//! derive's code names `schemars::…`, so either that name is in scope (`use agent::schemars;`,
//! what the guide does) or the type names the crate (`#[schemars(crate = "agent::schemars")]`).
//! This crate has no `schemars` dependency, so both compiling is the proof.

mod name_in_scope {
    use agent::{JsonSchema, schemars};

    #[derive(serde::Deserialize, JsonSchema)]
    pub(super) struct Imported {
        pub(super) _written: bool,
    }
}

mod crate_attribute {
    #[derive(serde::Deserialize, agent::JsonSchema)]
    #[schemars(crate = "agent::schemars")]
    pub(super) struct Attributed {
        pub(super) _written: bool,
    }
}

#[test]
fn both_ways_derive_the_same_schema() {
    let imported = agent::schemars::schema_for!(name_in_scope::Imported);
    let attributed = agent::schemars::schema_for!(crate_attribute::Attributed);
    assert_eq!(imported.get("properties"), attributed.get("properties"));
    assert_eq!(
        imported.get("required").unwrap(),
        &serde_json::json!(["_written"])
    );
}
