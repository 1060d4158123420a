//! ML-KEM-512, -768 and -1024 on an ATmega1284p, each operation inside a
//! marker window: a write of the window's id to GPIOR0 opens it, the id
//! with bit 7 set closes it, and the simulator (`avr-sim`, through `cargo
//! xtask ml-kem-sets`) records the cycles and the stack below the opening
//! SP. Windows `0xS0`, `0xS1`, `0xS2` are key generation, encapsulation and
//! decapsulation of set S (1: 512, 2: 768, 3: 1024); window 0x7E at the end
//! says every round trip agreed (0x7D: one did not).
//!
//! The keys and ciphertexts live in the caller's frame, outside the
//! windows, as firmware keeping them in static memory would; the ChaCha20
//! draws (96 bytes a round trip) are inside them.
#![no_std]
#![no_main]

use kyber512_avr::rand_core::SeedableRng;
use panic_halt as _;

/// GPIOR0's data-space address on the ATmega1284p: the simulator's marker register.
const GPIOR0: *mut u8 = 0x3E as *mut u8;

fn mark(id: u8) {
    // SAFETY: GPIOR0 is a general-purpose I/O register with no side effect.
    unsafe { core::ptr::write_volatile(GPIOR0, id) }
}

/// The three operations of one set's `raw` API in windows `$id`, `$id + 1`
/// and `$id + 2`; whether the round trip agreed.
macro_rules! measure {
    ($set:ident, $id:expr, $rng:expr) => {{
        use kyber512_avr::$set::{params, raw};
        let mut ek = [0u8; params::EK_BYTES];
        let mut dk = [0u8; params::DK_BYTES];
        let mut ct = [0u8; params::CT_BYTES];
        mark($id);
        let generated = raw::keygen_into($rng, &mut ek, &mut dk).is_ok();
        mark($id | 0x80);
        mark($id + 1);
        let sent = raw::encapsulate_into(&ek, $rng, &mut ct);
        mark(($id + 1) | 0x80);
        mark($id + 2);
        let received = raw::decapsulate_into(&dk, &ct);
        mark(($id + 2) | 0x80);
        generated && sent.is_ok_and(|s| s == received)
    }};
}

// One function per set, not inlined: one set's buffers on the stack at a time.
#[inline(never)]
fn ml_kem_512(rng: &mut rand_chacha::ChaCha20Rng) -> bool {
    measure!(ml_kem_512, 0x10, rng)
}
#[inline(never)]
fn ml_kem_768(rng: &mut rand_chacha::ChaCha20Rng) -> bool {
    measure!(ml_kem_768, 0x20, rng)
}
#[inline(never)]
fn ml_kem_1024(rng: &mut rand_chacha::ChaCha20Rng) -> bool {
    measure!(ml_kem_1024, 0x30, rng)
}

#[avr_device::entry]
fn main() -> ! {
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([42; 32]);
    let agreed = ml_kem_512(&mut rng) & ml_kem_768(&mut rng) & ml_kem_1024(&mut rng);
    let verdict = if agreed { 0x7E } else { 0x7D };
    mark(verdict);
    mark(verdict | 0x80);
    avr_device::interrupt::disable();
    loop {
        avr_device::asm::sleep();
    }
}
