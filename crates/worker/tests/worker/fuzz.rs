//! Random byte streams fed to the worker's server loop: it never panics, never hangs, and
//! still answers a valid request after them.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use worker_protocol::STOP;

use crate::support::Pipe;

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..512),
        2 => "[{}\\[\\]\":,\\\\0-9a-z .\n-]{0,200}".prop_map(String::into_bytes),
        1 => "(\\{\"jsonrpc\":\"2.0\",\"id\":[0-9],\"method\":\"runtime\\.(stop|startTask|configure|event)\",\"params\":[{}a-z0-9\":,]{0,30}\\}\n){1,4}"
            .prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(test_support::fuzz_config())]

    #[test]
    fn random_bytes_never_panic_nor_hang_the_server(input in bytes()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let outcome: Result<(), String> = runtime.block_on(async move {
            let mut pipe = Pipe::new(256);
            pipe.to_worker.write_all(&input).await.map_err(|e| e.to_string())?;
            // End a partial last line, so the probe is a line of its own.
            pipe.to_worker.write_all(b"\n").await.map_err(|e| e.to_string())?;
            pipe.request(json!("probe"), STOP, json!({"handle": 424242})).await;
            let answer = tokio::time::timeout(Duration::from_secs(10), pipe.answer(&json!("probe"), &mut Vec::new()))
                .await
                .map_err(|_| "no answer to the probe".to_owned())?;
            if answer["result"] != json!({"stopped": false}) {
                return Err(format!("the probe's answer: {answer}"));
            }
            let Pipe { to_worker, served, .. } = pipe;
            drop(to_worker);
            tokio::time::timeout(Duration::from_secs(10), served)
                .await
                .map_err(|_| "the server did not end with its input".to_owned())?
                .map_err(|e| format!("the server panicked: {e}"))
        });
        prop_assert_eq!(outcome, Ok(()));
    }
}
