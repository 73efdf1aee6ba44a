//! Concurrent writers of one namespace's config are serialized by the config lock.

use std::thread;

use crate::support::{Sandbox, codex};

#[test]
fn concurrent_read_modify_write_loses_no_update() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 25;
    let sb = Sandbox::new();
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                // Each writer builds its own environment for the namespace, as separate
                // host processes would (this also races the directory creation).
                let env = sb.builder("user:shared").build().unwrap();
                for _ in 0..ROUNDS {
                    let lock = env.lock_config().unwrap();
                    let current = lock
                        .read(codex(), "counter.txt")
                        .unwrap()
                        .map(|b| String::from_utf8(b).unwrap().parse::<usize>().unwrap())
                        .unwrap_or(0);
                    thread::yield_now();
                    lock.write(codex(), "counter.txt", (current + 1).to_string().as_bytes())
                        .unwrap();
                }
            });
        }
    });
    let env = sb.builder("user:shared").build().unwrap();
    let lock = env.lock_config().unwrap();
    let total = lock.read(codex(), "counter.txt").unwrap().unwrap();
    assert_eq!(
        String::from_utf8(total).unwrap(),
        (THREADS * ROUNDS).to_string()
    );
}

#[test]
fn different_namespaces_do_not_share_a_lock() {
    let sb = Sandbox::new();
    let a = sb.builder("user:a").build().unwrap();
    let b = sb.builder("user:b").build().unwrap();
    let _held = a.lock_config().unwrap();
    // Would block forever if the lock were global.
    b.write_runtime_file(codex(), "config.toml", b"x").unwrap();
}
