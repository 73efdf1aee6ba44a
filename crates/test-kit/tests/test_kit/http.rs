//! Raw HTTP/1.1 helpers shared by the mock tests (one request per connection).

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) struct HttpReply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl HttpReply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }

    /// (event name, parsed data) of each `event:`/`data:` SSE frame; asserts the framing.
    pub(crate) fn named_sse(&self) -> Vec<(String, Value)> {
        assert!(self.body.ends_with("\n\n"), "stream ends with a blank line");
        self.body
            .strip_suffix("\n\n")
            .unwrap()
            .split("\n\n")
            .map(|frame| {
                let mut lines = frame.lines();
                let event = lines.next().unwrap().strip_prefix("event: ").unwrap();
                let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
                assert_eq!(lines.next(), None, "one data line per frame: {frame:?}");
                let data: Value = serde_json::from_str(data).unwrap();
                assert_eq!(data["type"], event, "data.type repeats the event name");
                (event.to_owned(), data)
            })
            .collect()
    }

    /// The payloads of `data:`-only SSE frames, verbatim (`[DONE]` included).
    pub(crate) fn data_frames(&self) -> Vec<String> {
        assert!(self.body.ends_with("\n\n"), "stream ends with a blank line");
        self.body
            .strip_suffix("\n\n")
            .unwrap()
            .split("\n\n")
            .map(|frame| {
                assert_eq!(frame.lines().count(), 1, "one line per frame: {frame:?}");
                frame.strip_prefix("data: ").unwrap().to_owned()
            })
            .collect()
    }
}

/// One request on a fresh connection (`connection: close`), read to the end.
pub(crate) async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> HttpReply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (n, v) = line.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let body = if headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v == "chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    HttpReply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}
