//! Little-endian bit packing (groups of 8 values, constant shifts) and 4-bit small coefficients.

/// Packs `count` values of `d` bits (1 ≤ d ≤ 16; upper bits ignored) as a
/// little-endian bit stream into `out` (count·d/8 bytes).
///
/// ```
/// // Four 10-bit values in 5 bytes.
/// let values = [1u16, 2, 3, 1023];
/// let mut packed = [0u8; 5];
/// kem_common::pack_bits(10, 4, &mut packed, |i| values[i]);
/// assert_eq!(packed[..2], [0x01, 0x08]); // 1, then 2 from bit 10 on
/// let mut back = [0u16; 4];
/// kem_common::unpack_bits(10, 4, &packed, |i, v| back[i] = v);
/// assert_eq!(back, values);
/// ```
#[inline]
pub fn pack_bits(d: u32, count: usize, out: &mut [u8], value: impl FnMut(usize) -> u16) {
    let mut bytes = out.iter_mut();
    pack_bits_with(d, count, value, |_, byte| {
        if let Some(b) = bytes.next() {
            *b = byte;
        }
    });
}

/// Like [`pack_bits`], but hands byte k of the stream to `emit(k, byte)`:
/// a caller can compare a stream against a buffer without storing it.
/// Groups of 8 values, like [`unpack_bits`], so every shift is a constant.
#[inline]
pub fn pack_bits_with(d: u32, count: usize, mut value: impl FnMut(usize) -> u16, mut emit: impl FnMut(usize, u8)) {
    let width = d as usize;
    let mask = (1u32 << d) - 1;
    let (mut i, mut pos) = (0, 0);
    while i < count {
        let mut group = [0u8; 18];
        for k in 0..8 {
            if i + k < count {
                let bit = k * width;
                let window = (value(i + k) as u32 & mask) << (bit & 7);
                let b = &mut group[bit >> 3..];
                b[0] |= window as u8;
                b[1] |= (window >> 8) as u8;
                b[2] |= (window >> 16) as u8;
            }
        }
        // Whole bytes only: a trailing partial byte is dropped.
        for &byte in &group[..((count - i).min(8) * width) >> 3] {
            emit(pos, byte);
            pos += 1;
        }
        i += 8;
    }
}

/// Unpacks `count` values of `d` bits from a little-endian bit stream,
/// calling `sink(i, value)`; missing input bytes read as zero.
///
/// ```
/// let mut values = [0u16; 2];
/// kem_common::unpack_bits(12, 2, &[0x01, 0x20, 0x00], |i, v| values[i] = v);
/// assert_eq!(values, [1, 2]);
/// ```
///
/// Works in groups of 8 values (= d bytes): once inlined with a constant
/// `d`, every shift is a constant. (A running bit count makes every shift
/// variable, and a variable shift on the AVR is a loop, one bit a turn.)
#[inline]
pub fn unpack_bits(d: u32, count: usize, input: &[u8], mut sink: impl FnMut(usize, u16)) {
    let width = d as usize;
    let mask = (1u32 << d) - 1;
    let mut i = 0;
    // Every group is read in place (a value never reaches past its group's
    // d bytes), so nothing is copied: a copy of a run of bytes is a `memcpy`
    // call on the AVR. A short last group, and any group after it, reads
    // its missing bytes as zero through `get`.
    let mut groups = input.chunks_exact(width);
    let mut tail = groups.remainder();
    while i < count {
        let bytes: &[u8] = match groups.next() {
            Some(bytes) => bytes,
            None => core::mem::take(&mut tail),
        };
        let byte = |j: usize| bytes.get(j).copied().unwrap_or(0) as u32;
        for k in 0..8 {
            if i + k < count {
                let bit = k * width;
                let at = bit >> 3;
                let window = byte(at) | byte(at + 1) << 8 | byte(at + 2) << 16;
                sink(i + k, ((window >> (bit & 7)) & mask) as u16);
            }
        }
        i += 8;
    }
}

/// Small signed coefficients (|c| ≤ 7) kept 4 bits each, two's complement,
/// low nibble first: a quarter of an i16 polynomial's RAM. Writes
/// `2·packed.len()` values (at most `out.len()`).
pub fn unpack_nibbles(packed: &[u8], out: &mut [i16]) {
    // A byte at a time: constant shifts (a variable one loops on the AVR).
    for (pair, &byte) in out.chunks_exact_mut(2).zip(packed.iter()) {
        pair[0] = low_nibble(byte);
        pair[1] = low_nibble(byte >> 4);
    }
}

/// Coefficient `i` of nibble-packed small coefficients (see [`unpack_nibbles`]).
#[inline(always)]
pub fn nibble(packed: &[u8], i: usize) -> i16 {
    low_nibble(packed[i >> 1] >> ((i & 1) << 2))
}

/// The low 4 bits of `byte` as a two's complement value.
#[inline(always)]
fn low_nibble(byte: u8) -> i16 {
    ((byte << 4) as i8 >> 4) as i16
}

/// Coefficient `c` (|c| ≤ 7) into nibble `i` of `packed` (which must be
/// zero there before).
#[inline(always)]
pub fn set_nibble(packed: &mut [u8], i: usize, c: i16) {
    packed[i >> 1] |= ((c as u8) & 0xF) << ((i & 1) << 2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packing_round_trips_for_every_width() {
        for d in 1..=16u32 {
            let count = 64;
            // A count that is not a multiple of 8 and a short input (zeros).
            let mut odd = [0u16; 11];
            unpack_bits(d, 11, &[0xFF; 2], |i, v| odd[i] = v);
            let ones = (16 / d as usize).min(11);
            assert!(odd[..ones].iter().all(|&v| v == ((1u32 << d) - 1) as u16), "d = {d}");
            assert!(odd[(ones + 1).min(11)..].iter().all(|&v| v == 0), "d = {d}");
            let values: [u16; 64] =
                core::array::from_fn(|i| ((i as u32).wrapping_mul(2654435761) >> 7) as u16 & ((1u32 << d) - 1) as u16);
            let mut bytes = [0u8; 128];
            let len = count * d as usize / 8;
            pack_bits(d, count, &mut bytes[..len], |i| values[i]);
            let mut back = [0u16; 64];
            unpack_bits(d, count, &bytes[..len], |i, v| back[i] = v);
            assert_eq!(back, values, "d = {d}");
        }
    }

    #[test]
    fn nibbles_round_trip_every_small_value() {
        let values: [i16; 16] = core::array::from_fn(|i| i as i16 - 8);
        let mut packed = [0u8; 8];
        for (i, &v) in values.iter().enumerate() {
            set_nibble(&mut packed, i, v);
        }
        let mut back = [0i16; 16];
        unpack_nibbles(&packed, &mut back);
        assert_eq!(back, values);
    }

    #[test]
    fn little_endian_order() {
        let mut out = [0u8; 5];
        pack_bits(10, 4, &mut out, |i| [0x3FF, 0, 1, 0x200][i]);
        assert_eq!(out, [0xFF, 0x03, 0x10, 0x00, 0x80]);
    }
}
