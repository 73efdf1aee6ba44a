//! Unit tests of the stream redactor that need its internals: the count of bytes scanned.
#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

use secrecy::SecretString;

fn stream_all(r: &mut StreamRedactor, pieces: &[&str]) -> String {
    let mut out = String::new();
    for piece in pieces {
        out.push_str(&r.push(piece));
    }
    out.push_str(&r.finish());
    out
}

fn redactor(secrets: &[&str]) -> StreamRedactor {
    StreamRedactor::new(secrets.iter().map(|s| SecretString::from(*s)).collect())
}

#[test]
fn a_known_secret_split_into_small_chunks_is_redacted_whole() {
    let token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let text = format!("the token is {token} and more text follows here");
    let pieces: Vec<String> = text
        .as_bytes()
        .chunks(8)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let out = stream_all(&mut redactor(&[token]), &pieces);
    assert!(!out.contains(&token[..16]), "{out}");
    assert!(
        out.contains("[REDACTED]") && out.ends_with("follows here"),
        "{out}"
    );
}

#[test]
fn a_pattern_split_between_keyword_and_value_is_redacted() {
    let out = stream_all(
        &mut redactor(&[]),
        &[
            "Authorization: Bea",
            "rer abcdef",
            "ghij123 and then",
            " some words go by",
        ],
    );
    assert!(!out.contains("abcdefghij123"), "{out}");
    assert!(out.contains("Bearer [REDACTED]"), "{out}");
}

#[test]
fn every_byte_comes_out_once_in_order() {
    let text = "héllo wörld, nothing secret in this text at all — ünïcode too";
    let pieces: Vec<String> = text.chars().map(String::from).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    assert_eq!(stream_all(&mut redactor(&["zz-secret-zz"]), &pieces), text);
}

#[test]
fn a_long_word_is_released_but_never_through_a_secret() {
    let secret = "s3cr3t-canary-0011";
    let mut r = redactor(&[secret]);
    let long = "x".repeat(MAX_PENDING + 10);
    let ready = r.push(&format!("{long}{secret}"));
    assert!(!ready.is_empty() && !ready.contains("s3cr3t"));
    let rest = r.finish();
    assert!(!rest.contains(secret), "{rest}");
}

/// The text of `lines` lines of 64 base64 characters after a private key header.
fn open_private_key(lines: usize) -> String {
    let mut text = String::from("the key: -----BEGIN RSA PRIVATE KEY-----\n");
    for i in 0..lines {
        let line: String = (0..64)
            .map(|k| {
                char::from(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                        [(i * 7 + k) % 64],
                )
            })
            .collect();
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Streams `text` in pieces of `size` bytes; returns the output, the bytes scanned, and
/// the most held back after any push.
fn measure(r: &mut StreamRedactor, text: &str, size: usize) -> (String, usize, usize) {
    let before = r.scanned;
    let mut out = String::new();
    let mut held = 0;
    for piece in text.as_bytes().chunks(size) {
        out.push_str(&r.push(std::str::from_utf8(piece).unwrap()));
        held = held.max(r.pending_len());
    }
    out.push_str(&r.finish());
    (out, r.scanned - before, held)
}

/// Issue 24, finding 1: after a private key header with no END, every push stepped back a
/// word at a time redacting the whole buffer twice per step (cubic; 400 lines took 20 s).
/// The work is now linear in the streamed bytes, for 1-byte and 64-byte pieces alike, and
/// the held text stays bounded.
#[test]
fn streaming_work_is_linear_in_the_streamed_bytes() {
    let secrets = ["opaque-secret-value-1", "p@ss w/rd \"q\""];
    for size in [1, 64] {
        for lines in [100, 200, 400, 1600, 4000] {
            let text = open_private_key(lines);
            let mut r = redactor(&secrets);
            let (out, scanned, held) = measure(&mut r, &text, size);
            assert_eq!(
                out, "the key: -----BEGIN RSA PRIVATE KEY-----[REDACTED]",
                "{lines} lines in pieces of {size}"
            );
            assert!(
                scanned <= 8 * text.len(),
                "{lines} lines in pieces of {size}: {scanned} bytes scanned for {}",
                text.len()
            );
            assert!(held < 4 * MAX_PENDING, "{lines} lines: held {held}");
        }
    }
}

/// The other worst inputs: clean text, one endless word, near-prefixes of a secret,
/// repeated keywords, an endless run of blanks after a keyword, a run of touching
/// occurrences of a secret.
#[test]
fn the_worst_inputs_are_scanned_a_bounded_number_of_times() {
    let secret = "abcdefgh-secret";
    let cases = [
        (
            "clean",
            "the quick brown fox jumps over the lazy dog. ".repeat(4000),
        ),
        ("one word", "x".repeat(200_000)),
        ("near prefixes", "abcdefgh-secre ".repeat(12_000)),
        ("bearers", "Bearer ".repeat(30_000)),
        ("blanks", format!("Authorization:{}", " ".repeat(200_000))),
        ("touching", secret.repeat(15_000)),
        (
            "open quote",
            format!("\"token\": \"{}", "y".repeat(200_000)),
        ),
    ];
    for (name, text) in cases {
        for size in [1, 16, 100_000] {
            let mut r = redactor(&[secret]);
            let (out, scanned, held) = measure(&mut r, &text, size);
            assert!(!out.contains(secret), "{name}");
            assert!(
                scanned <= 12 * text.len(),
                "{name} in pieces of {size}: {scanned} bytes scanned for {}",
                text.len()
            );
            assert!(held < 4 * MAX_PENDING, "{name}: held {held}");
        }
    }
}
