//! A fake runtime CLI (a shell script) started from a RuntimeEnv dumps its environment and
//! `stat`s its directories: the namespaced CODEX_HOME exists, host values and host
//! credentials are gone, injected secrets arrive.

use std::fs;

use secrecy::SecretString;

use crate::support::{Sandbox, codex};

const SCRIPT: &str = r#"#!/bin/sh
out="$1"
env > "$out/env.txt"
: > "$out/stat.txt"
for v in HOME XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR \
         TMPDIR CODEX_HOME CLAUDE_CONFIG_DIR CURSOR_CONFIG_DIR CODEBUDDY_CONFIG_DIR GEMINI_CLI_HOME; do
  eval "p=\${$v}"
  if [ -d "$p" ]; then
    m=$(stat -c %a "$p" 2>/dev/null || stat -f %Lp "$p")
    echo "$v $m" >> "$out/stat.txt"
  else
    echo "$v missing" >> "$out/stat.txt"
  fi
done
pwd > "$out/pwd.txt"
"#;

#[test]
fn child_sees_namespaced_codex_home_and_no_host_credentials() {
    let sb = Sandbox::new();
    let script = sb.tmp.path().join("fake-cli.sh");
    fs::write(&script, SCRIPT).unwrap();
    let out_dir = sb.tmp.path().join("out");
    fs::create_dir(&out_dir).unwrap();

    let env = sb
        .builder("user:alice")
        .secret(
            "CODEBUDDY_API_KEY",
            SecretString::from("injected-codebuddy-key"),
        )
        .build()
        .unwrap();
    let status = env
        .command("/bin/sh")
        .arg(&script)
        .arg(&out_dir)
        .status()
        .unwrap();
    assert!(status.success());

    let dump = fs::read_to_string(out_dir.join("env.txt")).unwrap();
    let codex_home = env.state_dir(codex()).unwrap();
    assert!(codex_home.starts_with(env.root().unwrap()));
    assert!(
        dump.lines()
            .any(|l| l == format!("CODEX_HOME={}", codex_home.display())),
        "{dump}"
    );
    assert!(
        !dump.contains("/somewhere"),
        "host CODEX_HOME/CLAUDE_CONFIG_DIR leaked: {dump}"
    );
    assert!(!dump.contains("canary"), "host credential leaked: {dump}");
    assert!(
        !dump.contains("/home/host-user"),
        "host HOME/XDG leaked: {dump}"
    );
    assert!(!dump.contains("LD_PRELOAD"), "{dump}");
    assert!(
        dump.contains("CODEBUDDY_API_KEY=injected-codebuddy-key"),
        "{dump}"
    );
    assert!(dump.contains("PATH=/usr/local/bin:/usr/bin:/bin"), "{dump}");
    assert!(
        dump.lines()
            .any(|l| l == format!("HOME={}", env.home().display())),
        "{dump}"
    );

    let stats = fs::read_to_string(out_dir.join("stat.txt")).unwrap();
    let lines: Vec<&str> = stats.lines().collect();
    assert_eq!(lines.len(), 12, "{stats}");
    for line in lines {
        assert!(line.ends_with(" 700"), "{line}");
    }
    let pwd = fs::read_to_string(out_dir.join("pwd.txt")).unwrap();
    assert_eq!(
        fs::canonicalize(pwd.trim()).unwrap(),
        fs::canonicalize(sb.project()).unwrap()
    );
}
