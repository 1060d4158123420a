//! ML-KEM on an ATmega1284p: key generation, encapsulation and
//! decapsulation with `kyber512-avr` for each FIPS 203 set (512, 768,
//! 1024), each result printed over USART0.
#![no_std]
#![no_main]

use avr_device::atmega1284p::{Peripherals, USART0};
use kyber512_avr::rand_core::SeedableRng;
use panic_halt as _;

/// The CPU clock the baud-rate divisor assumes (16 MHz, as the runner's
/// `-f 16000000` and most ATmega1284p boards).
const F_CPU: u32 = 16_000_000;
const BAUD: u32 = 9_600;

fn uart_init(usart: &USART0) {
    let ubrr = (F_CPU / (16 * BAUD) - 1) as u16;
    // SAFETY: any 12-bit divisor is a valid baud-rate setting.
    usart.ubrr0().write(|w| unsafe { w.bits(ubrr) });
    usart.ucsr0b().write(|w| w.txen0().set_bit());
    // 8 data bits, no parity, one stop bit.
    usart.ucsr0c().write(|w| w.ucsz0().chr8());
}

fn uart_write(usart: &USART0, text: &str) {
    for byte in text.bytes() {
        while usart.ucsr0a().read().udre0().bit_is_clear() {}
        usart.udr0().write(|w| w.set(byte));
    }
}

/// Key generation, encapsulation and decapsulation with one parameter
/// set's module of `kyber512-avr`; the verdict line.
macro_rules! round_trip {
    ($set:ident, $name:literal, $rng:expr) => {{
        use kyber512_avr::$set;
        match $set::keygen($rng) {
            Ok((dk, ek)) => match $set::encapsulate(&ek, $rng) {
                Ok((ct, sent)) => {
                    let received = $set::decapsulate(&dk, &ct);
                    if received == sent {
                        concat!($name, " round trip OK\n")
                    } else {
                        concat!($name, " round trip FAILED: the shared secrets differ\n")
                    }
                }
                Err(_) => concat!($name, " encapsulation failed: the random generator\n"),
            },
            Err(_) => concat!($name, " key generation failed: the random generator\n"),
        }
    }};
}

// One function per set, not inlined: each set's keys live in its own
// stack frame, one at a time.
#[inline(never)]
fn ml_kem_512_round_trip(rng: &mut rand_chacha::ChaCha20Rng) -> &'static str {
    round_trip!(ml_kem_512, "ML-KEM-512", rng)
}
#[inline(never)]
fn ml_kem_768_round_trip(rng: &mut rand_chacha::ChaCha20Rng) -> &'static str {
    round_trip!(ml_kem_768, "ML-KEM-768", rng)
}
/// ML-KEM-1024 through the byte-buffer API (`raw`): its keys and
/// ciphertext in caller buffers, 6.3 KB in all. Through the typed API, as
/// above, this round trip does not finish on the ATmega1284p's 16 KB of
/// SRAM: a typed decapsulation key also keeps a copy of its 1,568-byte
/// encapsulation key, and the typed values are moved between frames.
#[inline(never)]
fn ml_kem_1024_round_trip(rng: &mut rand_chacha::ChaCha20Rng) -> &'static str {
    use kyber512_avr::ml_kem_1024::raw;
    let (mut ek, mut dk, mut ct) = ([0u8; 1568], [0u8; 3168], [0u8; 1568]);
    if raw::keygen_into(rng, &mut ek, &mut dk).is_err() {
        return "ML-KEM-1024 key generation failed\n";
    }
    let Ok(sent) = raw::encapsulate_into(&ek, rng, &mut ct) else {
        return "ML-KEM-1024 encapsulation failed\n";
    };
    if raw::decapsulate_into(&dk, &ct) == sent {
        "ML-KEM-1024 round trip OK\n"
    } else {
        "ML-KEM-1024 round trip FAILED\n"
    }
}

#[avr_device::entry]
fn main() -> ! {
    let dp = Peripherals::take().unwrap();
    let usart = dp.USART0;
    uart_init(&usart);

    // Reproducible demonstration only: replace with a generator seeded from
    // a real entropy source before anything leaves the bench.
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([42; 32]);

    uart_write(&usart, ml_kem_512_round_trip(&mut rng));
    // The larger FIPS 203 sets (secret keys of 2.4 and 3.2 KB).
    uart_write(&usart, ml_kem_768_round_trip(&mut rng));
    uart_write(&usart, ml_kem_1024_round_trip(&mut rng));

    avr_device::interrupt::disable();
    loop {
        avr_device::asm::sleep();
    }
}
