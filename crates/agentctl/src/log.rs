//! `RUST_LOG`-controlled `tracing` output on stderr, every write passed through
//! `runtime_env::redact` first: the libraries never log a secret value, and this is the net
//! under that rule for anything shaped like a credential. Control characters in a logged
//! value (a CLI's stderr line, say) are shown escaped, as everywhere agentctl prints.

use std::io::Write;

use tracing_subscriber::EnvFilter;

/// Installs the subscriber when `RUST_LOG` is set; without it nothing is logged.
pub(crate) fn init() {
    if std::env::var_os("RUST_LOG").is_none() {
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::from_default_env())
        .with_ansi(false)
        .with_writer(|| RedactingStderr)
        .try_init();
}

/// Stderr, redacted. The formatter writes each event in one call, so a pattern is not split
/// across writes.
struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let redacted = runtime_env::redact(&text);
        let shown = crate::terminal::terminal_safe(&redacted, crate::terminal::Shown::Text);
        std::io::stderr().write_all(shown.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
