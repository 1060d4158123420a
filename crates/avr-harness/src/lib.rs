#![no_std]
//! AVR harness (work in progress).
