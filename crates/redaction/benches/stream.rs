//! Streaming redaction throughput, on ordinary text and on the worst inputs we could
//! construct for the stream redactor: a private key header with no END followed by 100 to
//! 1600 lines (the input that was cubic before issue 24), one endless word, near-prefixes of a
//! known secret, endless `Bearer ` keywords, JSON-escaped secrets, an endless quoted value and
//! an endless run of blanks after a keyword. Each worst case runs at two sizes, a quarter and
//! the whole, to show that the time scales with the bytes. Prints the median of several runs
//! per case.
//!
//! Run with `cargo bench -p redaction --bench stream`; `-- --json` prints one JSON object per
//! case instead of the table:
//! `{"case":"clean text, 16-byte pieces","bytes":1048617,"pieces":65539,"median_ms":55.654,"mib_per_s":18.0}`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use redaction::{Redactor, StreamRedactor};
use secrecy::SecretString;

const MIB: usize = 1 << 20;

/// The known secret the near-prefix and JSON cases use (spaces, quotes and a slash, so its
/// JSON-escaped form is longer than itself).
const SECRET: &str = "opaque \"secret\" value/0042";

/// `unit` repeated to `bytes` bytes (or just over).
fn repeat_to(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes.div_ceil(unit.len()))
}

fn prose(bytes: usize) -> String {
    repeat_to(
        "The quick brown fox jumps over the lazy dog; then it reads the logs, \
         lists src/ and writes 42 lines of output.\n",
        bytes,
    )
}

fn open_private_key(lines: usize) -> String {
    let mut text = String::from("here it is: -----BEGIN RSA PRIVATE KEY-----\n");
    for i in 0..lines {
        let line: String = (0..64)
            .map(|k| {
                let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
                char::from(alphabet[(i * 7 + k) % 64])
            })
            .collect();
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// `text` cut into pieces of `size` bytes (never through a character).
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / size + 1);
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        out.push(piece);
        rest = tail;
    }
    out
}

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

struct Case {
    name: String,
    text: String,
    piece: usize,
}

fn case(name: impl Into<String>, text: String, piece: usize) -> Case {
    Case {
        name: name.into(),
        text,
        piece,
    }
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
    let redactor = Redactor::with_secrets(
        (0..7)
            .map(|i| format!("opaque-secret-value-{i}"))
            .chain([SECRET.to_owned()])
            .map(SecretString::from),
    );
    let escaped = SECRET.replace('"', "\\\"").replace('/', "\\/");
    let near_prefix = format!("{} ", &SECRET[..SECRET.len() - 1]);
    let mut cases = vec![
        case("clean text, 16-byte pieces", prose(MIB), 16),
        case("clean text, 1-byte pieces", prose(MIB), 1),
    ];
    for lines in [100, 200, 400, 1600] {
        cases.push(case(
            format!("PEM, no END, {lines} lines, 64-byte pieces"),
            open_private_key(lines),
            64,
        ));
    }
    for lines in [400, 1600] {
        cases.push(case(
            format!("PEM, no END, {lines} lines, 1-byte pieces"),
            open_private_key(lines),
            1,
        ));
    }
    for (bytes, size) in [(MIB / 4, "256 KiB"), (MIB, "1 MiB")] {
        cases.extend([
            case(
                format!("one word of {size}, 16-byte pieces"),
                "x".repeat(bytes),
                16,
            ),
            case(
                format!("near-prefixes of a secret, {size}, 1-byte pieces"),
                repeat_to(&near_prefix, bytes),
                1,
            ),
            case(
                format!("`Bearer ` repeated, {size}, 1-byte pieces"),
                repeat_to("Bearer ", bytes),
                1,
            ),
            case(
                format!("JSON-escaped secrets, {size}, 16-byte pieces"),
                repeat_to(&format!(r#"{{"note":"the key is {escaped} ok"}}"#), bytes),
                16,
            ),
            case(
                format!("endless quoted value, {size}, 16-byte pieces"),
                format!("\"token\": \"{}", "y".repeat(bytes)),
                16,
            ),
            case(
                format!("endless blanks after `Authorization:`, {size}, 16-byte pieces"),
                format!("Authorization:{}", " ".repeat(bytes)),
                16,
            ),
        ]);
    }
    if !json {
        println!(
            "{:<58} {:>9} {:>8} {:>11} {:>10}",
            "case", "bytes", "pieces", "median ms", "MiB/s"
        );
    }
    for Case { name, text, piece } in &cases {
        let split = pieces(text, *piece);
        let runs = if text.len() / piece > 100_000 { 5 } else { 11 };
        let d = median(runs, || {
            let mut stream = StreamRedactor::new(redactor.clone());
            let mut out = 0;
            for p in &split {
                out += stream.push(black_box(p)).len();
            }
            out += stream.finish().len();
            black_box(out);
        });
        let ms = d.as_secs_f64() * 1e3;
        let mib_s = text.len() as f64 / MIB as f64 / d.as_secs_f64();
        if json {
            println!(
                "{{\"case\":\"{}\",\"bytes\":{},\"pieces\":{},\"median_ms\":{ms:.3},\"mib_per_s\":{mib_s:.1}}}",
                name.replace('"', "\\\""),
                text.len(),
                split.len()
            );
        } else {
            println!(
                "{name:<58} {:>9} {:>8} {ms:>11.3} {mib_s:>10.1}",
                text.len(),
                split.len()
            );
        }
    }
}
