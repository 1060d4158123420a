#![no_std]
#![forbid(unsafe_code)]
//! Placeholder: this crate is filled by its own issue; see the workspace README.
