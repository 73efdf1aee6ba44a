//! Fuzz-style properties (issue 13): validation of arbitrary attachments never panics, and an
//! error never shows the offending value (only its length, and a digest unless the value may
//! be a credential).
//!
//! 10,000 cases with a fixed seed, so a CI failure reproduces locally.

use proptest::prelude::*;
use proptest::test_runner::Config;
use run_service::{
    EnvBinding, McpServer, RunAttachment, RunServiceCompatibility, ServiceRef, validate_run,
};

fn config() -> Config {
    test_support::fuzz_config()
}

/// Strings that try every rule: empty, whitespace, control characters, credential shapes,
/// expansions, multi-byte, long.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9._-]{0,12}",
        2 => "\\PC{0,20}",
        1 => "[ \\t\\x00-\\x1f]{0,4}",
        1 => Just("https://user:pw@host/x?token=abc".to_owned()),
        1 => Just("--token".to_owned()),
        1 => Just("${OPENAI_API_KEY}".to_owned()),
        1 => (any::<char>(), 200usize..600).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
}

fn server() -> impl Strategy<Value = McpServer> {
    prop_oneof![
        (text(), text(), text(), text()).prop_map(|(name, url, header, value)| {
            McpServer::streamable_http(name, url).with_header(header, value)
        }),
        (text(), text(), text(), text(), text()).prop_map(|(name, cmd, arg, k, v)| {
            McpServer::stdio(name, cmd).with_args([arg]).with_env(k, v)
        }),
        (text(), text(), text())
            .prop_map(|(name, url, var)| { McpServer::sse(name, url).with_bearer_token_env(var) }),
    ]
}

fn attachment() -> impl Strategy<Value = RunAttachment> {
    (
        text(),
        text(),
        text(),
        text(),
        server(),
        proptest::option::of((text(), text())),
        text(),
    )
        .prop_map(|(id, name, url, secret_name, mcp, compat, meta)| {
            let service = ServiceRef::new(id, name)
                .with_url(url)
                .with_mcp(mcp)
                .with_metadata("note", meta)
                .with_secret_env(EnvBinding::new(secret_name, "fuzz-secret-value-0451"));
            let mut attachment = RunAttachment::new([service]);
            if let Some((cid, fp)) = compat {
                attachment =
                    attachment.with_resume_compatibility(RunServiceCompatibility::new(cid, fp));
            }
            attachment
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn validation_never_panics_nor_echoes(
        attachments in proptest::collection::vec(attachment(), 0..3),
        host in proptest::collection::vec(server(), 0..2),
    ) {
        if let Err(error) = validate_run(&attachments, &host) {
            let shown = format!("{error} {error:?}");
            prop_assert!(!shown.contains("fuzz-secret-value-0451"));
            prop_assert!(!shown.contains("user:pw@"));
            // Whatever value failed, at least 8 bytes of it never appear verbatim.
            for s in attachments.iter().flat_map(|a| a.services.iter()) {
                if let Some(url) = &s.url
                    && url.len() >= 24
                    && url.chars().all(|c| !c.is_control())
                {
                    prop_assert!(!shown.contains(url.as_str()), "{shown}");
                }
            }
        }
    }
}
