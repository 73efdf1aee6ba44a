//! Config fingerprints: stable; secret env values never enter them, plain ones are hashed.

use driver_spi::ConfigFingerprintBuilder;
use run_service::EnvBinding;

fn fingerprint(key: &str) -> compat_fingerprint::Fingerprint {
    ConfigFingerprintBuilder::new("codex")
        .str("command", "codex")
        .list("extra_args", ["--a", "--b"])
        .opt_str("model", None)
        .bool("persistent", true)
        .u64("timeout_secs", 60)
        .env("env", &[EnvBinding::new("OPENAI_API_KEY", key.to_owned())])
        .plain_env("plain_env", [("RUST_LOG", "info")])
        .finish()
}

#[test]
fn config_fingerprint_is_stable_and_leaves_secret_values_out() {
    assert_eq!(fingerprint("sk-canary-1"), fingerprint("sk-canary-1"));
    // Not even a digest of the secret: the fingerprint cannot confirm a guessed key.
    assert_eq!(fingerprint("sk-canary-1"), fingerprint("sk-canary-2"));
    assert!(!fingerprint("sk-canary-1").to_string().contains("sk-canary"));
    // The names still count.
    let with = |name: &str| {
        ConfigFingerprintBuilder::new("codex")
            .env("env", &[EnvBinding::new(name, "v")])
            .finish()
    };
    assert_ne!(with("OPENAI_API_KEY"), with("CODEX_API_KEY"));
}

#[test]
fn every_field_counts() {
    let base = ConfigFingerprintBuilder::new("codex").str("command", "codex");
    let fp = base.finish();
    assert_ne!(
        fp,
        ConfigFingerprintBuilder::new("claude")
            .str("command", "codex")
            .finish()
    );
    assert_ne!(fp, base.clone().str("command", "codex2").finish());
    assert_ne!(fp, base.clone().str("other", "codex").finish());
    assert_ne!(
        base.clone().opt_str("model", None).finish(),
        base.clone().opt_str("model", Some("")).finish()
    );
    assert_ne!(
        base.clone().list("args", ["a", "b"]).finish(),
        base.clone().list("args", ["b", "a"]).finish(),
        "argument order matters"
    );
    assert_ne!(
        base.clone().plain_env("env", [("A", "1")]).finish(),
        base.clone().plain_env("env", [("A", "2")]).finish()
    );
    // Env maps ignore order; a repeated field name replaces the earlier value.
    assert_eq!(
        base.clone()
            .plain_env("env", [("A", "1"), ("B", "2")])
            .finish(),
        base.clone()
            .plain_env("env", [("B", "2"), ("A", "1")])
            .finish()
    );
    assert_eq!(
        base.clone().str("command", "codex").finish(),
        fp,
        "setting a field again replaces it"
    );
}

#[test]
fn builder_debug_shows_field_names_only() {
    let builder = ConfigFingerprintBuilder::new("codex")
        .env("env", &[EnvBinding::new("OPENAI_API_KEY", "sk-canary-3")])
        .str("command", "codex-binary");
    let debug = format!("{builder:?}");
    assert!(!debug.contains("sk-canary"), "{debug}");
    assert!(!debug.contains("codex-binary"), "{debug}");
    assert!(debug.contains("env") && debug.contains("command"));
}
