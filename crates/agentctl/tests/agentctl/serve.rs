//! `agentctl serve --dev`: loopback only, a bearer token printed once, 401 without it, the
//! JSON reports with it, and no secret in them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use crate::support;

const CANARY: &str = "sk-agentctl-SERVE-CANARY-11aa";

/// One HTTP/1.1 GET; the status code and body.
fn get(address: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serves_the_reports_only_with_the_printed_token() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Killed(
        support::command()
            .args(["serve", "--dev", "--namespace", "user:dev", "--base"])
            .arg(dir.path().join("rt"))
            .env("OPENAI_API_KEY", CANARY)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let listening = lines.next().unwrap().unwrap();
    let address = listening
        .strip_prefix("listening on http://")
        .unwrap()
        .to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{address}");
    let token = lines.next().unwrap().unwrap();
    let token = token.strip_prefix("token ").unwrap().to_owned();
    assert_eq!(token.len(), 64);

    assert_eq!(get(&address, "/auth/status", None).0, 401);
    assert_eq!(get(&address, "/auth/status", Some("wrong")).0, 401);
    assert_eq!(get(&address, "/runtime-env", None).0, 401);

    let (status, body) = get(&address, "/auth/status", Some(&token));
    assert_eq!(status, 200, "{body}");
    let statuses: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        statuses
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["runtime"] == "codex")
    );
    assert!(!body.contains(CANARY));

    let (status, body) = get(&address, "/runtime-env", Some(&token));
    assert_eq!(status, 200, "{body}");
    let summary: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(summary["namespace"], "user:dev");
    assert!(!body.contains(CANARY));
}

#[test]
fn refuses_non_loopback_addresses_and_a_missing_dev_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = support::command()
        .args(["serve", "--dev", "--bind", "0.0.0.0", "--base"])
        .arg(dir.path().join("rt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
    let out = support::command().args(["serve"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
