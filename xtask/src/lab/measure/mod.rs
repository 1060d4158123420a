//! The commands that measure and check the firmware and the KEMs: `bench`
//! (cycles, stack and code of every operation, saved as records),
//! `boards` (which KEM and suite fits which board), `ct` (constant time),
//! `simtest` (`cargo xtask sim-test`: differential and KAT tests in the
//! simulators), `kat` (NIST-format KAT files), and `mega0`, the
//! ATmega4808's KAT and primitives runs the others share. The top of the
//! lab: `bench` and `boards` also measure the KEM-MQTT sensor (`crate::mqtt`).

pub mod bench;
pub mod boards;
pub mod ct;
pub mod kat;
pub mod mega0;
pub mod simtest;
