//! ATmega4808 (megaAVR-0) link support: avr-gcc 5.4 has no device spec for it.

use std::path::{Path, PathBuf};

/// Prepares the linker wrapper for the 4808 and returns its path.
pub fn prepare(_root: &Path, _target: &Path) -> Result<PathBuf, String> {
    Err("atmega4808 link support is not implemented yet".into())
}
