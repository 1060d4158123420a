//! AVR firmware (work in progress).
fn main() {}
