//! A stand-in for program memory in host tests (feature `test-rng`): keys
//! put here are read back through [`KeyBytes::Reader`]s, as a classic AVR
//! reads its flash. One memory per test thread.

extern crate std;

use core::cell::RefCell;
use std::vec::Vec;

use crate::KeyBytes;

std::thread_local! {
    static MEMORY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Replaces this thread's memory with `bytes`.
pub fn set(bytes: &[u8]) {
    MEMORY.with(|m| *m.borrow_mut() = bytes.to_vec());
}

/// Changes this thread's memory in place (a test's tampering).
pub fn modify(f: impl FnOnce(&mut [u8])) {
    MEMORY.with(|m| f(&mut m.borrow_mut()));
}

/// A reader of `len` bytes from `offset` in this thread's memory.
pub fn reader(offset: usize, len: usize) -> KeyBytes<'static> {
    KeyBytes::Reader { offset, len, read }
}

fn read(at: usize, out: &mut [u8]) {
    MEMORY.with(|m| {
        let m = m.borrow();
        for (i, o) in out.iter_mut().enumerate() {
            *o = m.get(at + i).copied().unwrap_or(0);
        }
    });
}
