//! Where an encryption's bytes go.

use subtle::Choice;

use crate::is_zero;

/// Where an encryption puts its ciphertext: into a buffer (encapsulation),
/// or compared with the received one as the bytes come (decapsulation's
/// re-encryption, which so needs no second ciphertext buffer). An enum
/// rather than a closure type parameter: a closure type per caller would
/// compile the whole encryption once per caller. `N` is the ciphertext
/// length: a constant bound makes each byte's range check a constant
/// comparison (with slices the re-encryption grew by 1.5 KB on the AVR).
pub enum CiphertextSink<'a, const N: usize> {
    /// Writes the ciphertext.
    Write(&'a mut [u8; N]),
    /// ORs each byte's difference from `expected` into `diff`.
    Compare {
        /// The received ciphertext.
        expected: &'a [u8; N],
        /// The OR of all byte differences so far.
        diff: u8,
    },
}

impl<'a, const N: usize> CiphertextSink<'a, N> {
    /// A sink comparing with `expected`.
    pub fn compare(expected: &'a [u8; N]) -> Self {
        CiphertextSink::Compare { expected, diff: 0 }
    }

    /// Byte `pos` of the ciphertext. Branches on the sink's kind (public),
    /// never on the byte; a position outside the buffer is dropped when
    /// writing and counts as a difference when comparing.
    #[inline(always)]
    pub fn put(&mut self, pos: usize, byte: u8) {
        match self {
            CiphertextSink::Write(ct) => {
                if let Some(c) = ct.get_mut(pos) {
                    *c = byte;
                }
            }
            CiphertextSink::Compare { expected, diff } => *diff |= byte ^ expected.get(pos).copied().unwrap_or(!byte),
        }
    }

    /// For a comparing sink: whether every byte put so far equalled the
    /// expected one. Positions never put are not compared: the encryptions
    /// using it put every ciphertext byte. A writing sink is never "equal".
    pub fn equal(&self) -> Choice {
        match self {
            CiphertextSink::Compare { diff, .. } => is_zero(*diff),
            CiphertextSink::Write(_) => Choice::from(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphertext_sink_writes_and_compares() {
        let expected = [1u8, 2, 3, 4];
        let mut written = [0u8; 4];
        let mut sink = CiphertextSink::Write(&mut written);
        for (k, &b) in expected.iter().enumerate() {
            sink.put(k, b);
        }
        sink.put(4, 9); // outside: dropped
        assert!(!bool::from(sink.equal()));
        assert_eq!(written, expected);

        let mut same = CiphertextSink::compare(&expected);
        for (k, &b) in expected.iter().enumerate() {
            same.put(k, b);
        }
        assert!(bool::from(same.equal()));
        for bad in 0..4 {
            for flip in [1u8, 0x80] {
                let mut sink = CiphertextSink::compare(&expected);
                for (k, &b) in expected.iter().enumerate() {
                    sink.put(k, if k == bad { b ^ flip } else { b });
                }
                assert!(!bool::from(sink.equal()), "byte {bad}, flip {flip:#x}");
            }
        }
        let mut outside = CiphertextSink::compare(&expected);
        outside.put(4, 0);
        assert!(!bool::from(outside.equal()));
    }
}
