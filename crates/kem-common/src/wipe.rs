//! Wiping secrets: [`Wipe`] and the key generations that leave nothing behind on failure.

use zeroize::Zeroize;

/// Zeroizes secret buffers through `zeroize` (volatile writes and a
/// compiler fence), in one out-of-line loop per element type.
///
/// Why not `x.zeroize()` on an array: it is inlined with its length known
/// and unrolled at opt-level 3, one volatile store per element. On the AVR
/// a store to a stack slot beyond `std`'s 63-byte displacement then costs
/// seven instructions (moving the frame pointer there and back, with
/// interrupts saved around it): wiping the buffers of one LightSaber
/// decapsulation took 2.5 KB of code. Through [`wipe_bytes`] it is a call.
///
/// ```
/// use kem_common::Wipe;
///
/// let mut secret = [0x5au8; 32];
/// secret.wipe();
/// assert_eq!(secret, [0; 32]);
/// ```
pub trait Wipe {
    /// Overwrites `self` with zeros.
    fn wipe(&mut self);
}

/// A key generation into caller buffers that leaves no key material behind
/// when it fails (its RNG, part-way: public): `keygen` fills `pk` and `sk`,
/// and on an error both are wiped.
#[inline(always)]
pub fn keygen_or_wipe<E, const P: usize, const S: usize>(
    pk: &mut [u8; P],
    sk: &mut [u8; S],
    keygen: impl FnOnce(&mut [u8; P], &mut [u8; S]) -> Result<(), E>,
) -> Result<(), E> {
    let result = keygen(pk, sk);
    if result.is_err() {
        sk.wipe();
        pk.wipe();
    }
    result
}

/// Runs `keygen` on the caller's secret-key buffer alone (the public key
/// lies inside it); on an error the buffer is wiped.
#[inline(always)]
pub fn secret_keygen_or_wipe<E, const S: usize>(
    sk: &mut [u8; S],
    keygen: impl FnOnce(&mut [u8; S]) -> Result<(), E>,
) -> Result<(), E> {
    let result = keygen(sk);
    if result.is_err() {
        sk.wipe();
    }
    result
}

/// Zeroizes `bytes` (the loop behind [`Wipe`] for byte buffers).
#[inline(never)]
pub fn wipe_bytes(bytes: &mut [u8]) {
    // Element by element (the slice impl builds an iterator on the stack and
    // costs about twice as many cycles a byte on the AVR), four a turn: the
    // loop's pointer update and compare are paid once per four stores.
    let mut quads = bytes.chunks_exact_mut(4);
    for quad in &mut quads {
        for b in quad {
            b.zeroize();
        }
    }
    for b in quads.into_remainder() {
        b.zeroize();
    }
}

/// Zeroizes `values` (the loop behind [`Wipe`] for coefficient buffers).
#[inline(never)]
pub fn wipe_i16(values: &mut [i16]) {
    let mut quads = values.chunks_exact_mut(4); // as in wipe_bytes
    for quad in &mut quads {
        for v in quad {
            v.zeroize();
        }
    }
    for v in quads.into_remainder() {
        v.zeroize();
    }
}

impl Wipe for [u8] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self);
    }
}

impl<const N: usize> Wipe for [u8; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self);
    }
}

impl<const N: usize, const M: usize> Wipe for [[u8; M]; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_bytes(self.as_flattened_mut());
    }
}

impl<const N: usize> Wipe for [i16; N] {
    #[inline(always)]
    fn wipe(&mut self) {
        wipe_i16(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wipe_clears_every_buffer_shape() {
        let mut bytes = [0xA5u8; 70];
        let mut rows = [[0x5Au8; 3]; 4];
        let mut coefficients = [-7i16; 33];
        let mut tail = [0xFFu8; 9];
        bytes.wipe();
        rows.wipe();
        coefficients.wipe();
        tail[2..].wipe();
        assert!(bytes.iter().all(|&b| b == 0));
        assert!(rows.iter().flatten().all(|&b| b == 0));
        assert!(coefficients.iter().all(|&c| c == 0));
        assert_eq!(tail, [0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0]);
    }
}
