//! Key bytes that need not be in the data space.
//!
//! A sensor's long-term keys are constants. On the megaAVR 0-series the
//! flash is mapped into the data space, so a constant is an ordinary
//! slice; on the classic AVRs (ATmega328p, 1284p, 2560) it is reachable
//! only through `lpm`/`elpm`, and a slice of it would be a copy in SRAM
//! (2.4–3.3 KB for a KEM-MQTT sensor's keys). [`KeyBytes::Reader`] lets a
//! KEM read such a key a piece at a time instead.
//!
//! The KEM code takes any [`KeySource`]: a `[u8]` (the slice API, for
//! which [`KeySource::as_slice`] is always `Some`, so the reader paths
//! compile away), or a [`KeyBytes`]. Which variant a `KeyBytes` is depends
//! on where the key is stored, never on its value, so the branches below
//! are on public data.

use core::ops::Range;

/// Bytes a KEM reads a key from.
pub trait KeySource {
    /// The number of bytes.
    fn len(&self) -> usize;

    /// Whether there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, when they are in the data space.
    fn as_slice(&self) -> Option<&[u8]>;

    /// Copies the bytes from `at` into `out` (bytes past the end read as 0).
    fn read(&self, at: usize, out: &mut [u8]);
}

impl KeySource for [u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn read(&self, at: usize, out: &mut [u8]) {
        let from = self.get(at..).unwrap_or(&[]);
        let n = out.len().min(from.len());
        let (inside, past) = out.split_at_mut(n);
        inside.copy_from_slice(from.get(..n).unwrap_or(&[]));
        past.fill(0);
    }
}

impl<const N: usize> KeySource for [u8; N] {
    fn len(&self) -> usize {
        N
    }

    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }

    fn read(&self, at: usize, out: &mut [u8]) {
        self[..].read(at, out)
    }
}

/// Where a key is: in the data space, or behind a reader.
#[derive(Clone, Copy)]
pub enum KeyBytes<'a> {
    /// In the data space (SRAM, or flash the data space maps).
    Slice(&'a [u8]),
    /// Elsewhere, such as a classic AVR's program memory: `read(offset +
    /// at, out)` copies bytes `at..` of the key into `out`.
    Reader {
        /// The key's first byte in what `read` reads.
        offset: usize,
        /// The key's length.
        len: usize,
        /// Copies `out.len()` bytes from the position given.
        read: fn(usize, &mut [u8]),
    },
}

impl<'a> From<&'a [u8]> for KeyBytes<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        KeyBytes::Slice(bytes)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for KeyBytes<'a> {
    fn from(bytes: &'a [u8; N]) -> Self {
        KeyBytes::Slice(bytes)
    }
}

impl KeySource for KeyBytes<'_> {
    fn len(&self) -> usize {
        match self {
            KeyBytes::Slice(s) => s.len(),
            KeyBytes::Reader { len, .. } => *len,
        }
    }

    fn as_slice(&self) -> Option<&[u8]> {
        match self {
            KeyBytes::Slice(s) => Some(s),
            KeyBytes::Reader { .. } => None,
        }
    }

    fn read(&self, at: usize, out: &mut [u8]) {
        match self {
            KeyBytes::Slice(s) => s.read(at, out),
            KeyBytes::Reader { offset, len, read } => {
                let n = out.len().min(len.saturating_sub(at));
                let (inside, past) = out.split_at_mut(n);
                read(offset + at, inside);
                past.fill(0);
            }
        }
    }
}

/// The longest piece [`for_each_piece`] copies out of a reader: a run of
/// packed coefficients ([`unpack_bits_in`]). Small, because the copy is on
/// the stack while the KEM works on it.
const MAX_PIECE: usize = 64;

#[inline(never)]
fn read_piece(read: &dyn Fn(usize, &mut [u8]), range: Range<usize>, f: &mut dyn FnMut(&[u8])) {
    let mut buf = [0u8; MAX_PIECE];
    let n = range.end.saturating_sub(range.start).min(MAX_PIECE);
    if let Some(piece) = buf.get_mut(..n) {
        read(range.start, piece);
        f(piece);
    }
    crate::wipe_bytes(&mut buf);
}

/// The `copy.len()` bytes at `at` in `key`: borrowed when the key is in the
/// data space (`copy` untouched), else read into `copy`. For short fields
/// (a seed, a hash): the caller's buffer is on its own stack.
#[inline(always)]
pub fn bytes_at<'a, S: KeySource + ?Sized>(key: &'a S, at: usize, copy: &'a mut [u8]) -> &'a [u8] {
    match key.as_slice() {
        Some(bytes) => bytes.get(at..at + copy.len()).unwrap_or(&[]),
        None => {
            key.read(at, copy);
            copy
        }
    }
}

/// Calls `f` on `range` of `key` in consecutive pieces of at most `piece`
/// bytes (at most [`MAX_PIECE`]; one piece when the key is in the data
/// space): for decoding a key that may be in program memory. A reader's
/// piece is copied to the stack of a frame of its own and wiped after `f`.
fn for_each_piece<S: KeySource + ?Sized>(key: &S, range: Range<usize>, piece: usize, mut f: impl FnMut(&[u8])) {
    if let Some(bytes) = key.as_slice() {
        return f(bytes.get(range).unwrap_or(&[]));
    }
    let piece = piece.clamp(1, MAX_PIECE);
    let read = |at, out: &mut [u8]| key.read(at, out);
    let mut at = range.start;
    while at < range.end {
        let end = (at + piece).min(range.end);
        read_piece(&read, at..end, &mut f);
        at = end;
    }
}

/// [`crate::unpack_bits`] of `count` `d`-bit values stored from `at` in
/// `key`: from a slice as `unpack_bits` itself (inlined: the slice API's
/// code stays what it was), else 32 values (`4·d` bytes) at a time.
#[inline(always)]
pub fn unpack_bits_in<S: KeySource + ?Sized>(d: u32, count: usize, key: &S, at: usize, sink: impl FnMut(usize, u16)) {
    match key.as_slice() {
        Some(bytes) => {
            let end = at + (count * d as usize).div_ceil(8);
            crate::unpack_bits(d, count, bytes.get(at..end).unwrap_or(&[]), sink)
        }
        None => unpack_pieces(d, count, key, at, sink),
    }
}

/// [`unpack_bits_in`] from a reader. Never inlined: inlined into a KEM's
/// product loops it multiplied their code (7 KB more for LightSaber on the
/// ATmega1284p).
#[inline(never)]
fn unpack_pieces<S: KeySource + ?Sized>(d: u32, count: usize, key: &S, at: usize, mut sink: impl FnMut(usize, u16)) {
    let d = d as usize;
    let mut first = 0;
    for_each_piece(key, at..at + (count * d).div_ceil(8), 4 * d, |piece| {
        let values = (piece.len() * 8 / d).min(count - first);
        crate::unpack_bits(d as u32, values, piece, |i, v| sink(first + i, v));
        first += values;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    static KEY: [u8; 1000] = {
        let mut k = [0u8; 1000];
        let mut i = 0;
        while i < 1000 {
            k[i] = (i * 7 + 3) as u8;
            i += 1;
        }
        k
    };

    fn read_key(at: usize, out: &mut [u8]) {
        out.copy_from_slice(&KEY[at..at + out.len()]);
    }

    #[test]
    fn a_reader_reads_its_range_and_zeros_past_it() {
        let reader = KeyBytes::Reader {
            offset: 100,
            len: 800,
            read: read_key,
        };
        assert_eq!((reader.len(), reader.as_slice()), (800, None));
        let mut out = [0u8; 40];
        reader.read(768, &mut out);
        assert_eq!(out[..32], KEY[868..900]);
        assert_eq!(out[32..], [0; 8], "past the end reads as zeros");
        let mut copy = [0u8; 33];
        assert_eq!(bytes_at(&reader, 5, &mut copy), &KEY[105..138]);
        assert_eq!(
            bytes_at(&KEY[..], 5, &mut [0u8; 33]),
            &KEY[5..38],
            "a slice is borrowed"
        );
    }

    #[test]
    fn pieces_cover_the_range_in_order() {
        let reader = KeyBytes::Reader {
            offset: 0,
            len: 1000,
            read: read_key,
        };
        let mut seen = [0u8; 1000];
        let mut at = 0;
        for_each_piece(&reader, 10..1000, 48, |p| {
            assert!(p.len() <= 48);
            seen[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        });
        assert_eq!(at, 990);
        assert_eq!(seen[..990], KEY[10..]);
    }

    #[test]
    fn unpacking_a_reader_gives_the_values_of_the_slice() {
        let reader = KeyBytes::Reader {
            offset: 0,
            len: 1000,
            read: read_key,
        };
        for (d, count, at) in [
            (12u32, 256usize, 0usize),
            (10, 256, 5),
            (13, 256, 100),
            (3, 512, 7),
            (10, 512, 320),
        ] {
            let (mut a, mut b) = ([0u16; 512], [0u16; 512]);
            unpack_bits_in(d, count, &reader, at, |i, v| a[i] = v);
            crate::unpack_bits(d, count, &KEY[at..], |i, v| b[i] = v);
            assert_eq!(a, b, "d {d}, {count} values at {at}");
        }
    }
}
