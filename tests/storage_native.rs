//! The storage conformance suite on the in-memory backend (the same functions run on IndexedDB in
//! `tests/web.rs`).
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::storage::conformance::{self as suite, Env};
use llm_wiki::storage::memory::MemoryBackend;

struct NativeEnv;

impl Env for NativeEnv {
    async fn sleep(&self, _ms: u32) {
        // A real await point without a timer: yield once.
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if yielded {
                std::task::Poll::Ready(())
            } else {
                yielded = true;
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await
    }
}

#[test]
fn round_trip() {
    block_on(suite::round_trip(&MemoryBackend::new()));
}

#[test]
fn fault_at_every_write_leaves_nothing() {
    block_on(suite::fault_at_every_write_leaves_nothing(
        &MemoryBackend::new(),
    ));
}

#[test]
fn stale_revision_is_refused() {
    block_on(suite::stale_revision_is_refused(&MemoryBackend::new()));
}

#[test]
fn reopen_returns_what_was_committed() {
    block_on(suite::reopen_returns_what_was_committed(
        &MemoryBackend::new(),
    ));
}

#[test]
fn upgrade_while_another_connection_is_open() {
    block_on(suite::upgrade_while_another_connection_is_open(
        &MemoryBackend::new(),
    ));
}

#[test]
fn upgrade_blocked_by_a_connection_that_ignores_versionchange() {
    block_on(
        suite::upgrade_blocked_by_a_connection_that_ignores_versionchange(&MemoryBackend::new()),
    );
}

#[test]
fn newer_schema_is_refused() {
    block_on(suite::newer_schema_is_refused(&MemoryBackend::new()));
}

#[test]
fn write_back_after_an_awaited_embedding_is_atomic() {
    block_on(suite::write_back_after_an_awaited_embedding_is_atomic(
        &MemoryBackend::new(),
        &NativeEnv,
    ));
}

#[test]
fn list_and_delete() {
    block_on(suite::list_and_delete(&MemoryBackend::new()));
}

#[test]
fn cjk_keys_and_prefix_scan() {
    block_on(suite::cjk_keys_and_prefix_scan(&MemoryBackend::new()));
}

#[test]
fn record_sources_are_written_whole() {
    block_on(suite::record_sources_are_written_whole(
        &MemoryBackend::new(),
    ));
}

#[test]
fn paged_scan_returns_every_key_once() {
    block_on(suite::paged_scan_returns_every_key_once(
        &MemoryBackend::new(),
    ));
}

#[test]
fn get_many_matches_get() {
    block_on(suite::get_many_matches_get(&MemoryBackend::new()));
}

#[test]
fn suite_list_matches_the_tests_here() {
    let here = include_str!("storage_native.rs");
    for name in suite::SUITE {
        assert!(
            here.contains(&format!("fn {name}()")),
            "{name} is not run natively"
        );
    }
}
