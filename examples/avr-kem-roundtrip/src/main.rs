//! ML-KEM-512 on an ATmega1284p: key generation, encapsulation and
//! decapsulation with `kyber512-avr`, the result printed over USART0.
#![no_std]
#![no_main]

use avr_device::atmega1284p::{Peripherals, USART0};
use kyber512_avr::ml_kem_512;
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

#[avr_device::entry]
fn main() -> ! {
    let dp = Peripherals::take().unwrap();
    let usart = dp.USART0;
    uart_init(&usart);

    // Reproducible demonstration only: replace with a generator seeded from
    // a real entropy source before anything leaves the bench.
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([42; 32]);

    let verdict = match ml_kem_512::keygen(&mut rng) {
        Ok((dk, ek)) => match ml_kem_512::encapsulate(&ek, &mut rng) {
            Ok((ct, sent)) => {
                let received = ml_kem_512::decapsulate(&dk, &ct);
                if received == sent {
                    "ML-KEM-512 round trip OK\n"
                } else {
                    "ML-KEM-512 round trip FAILED: the shared secrets differ\n"
                }
            }
            Err(_) => "ML-KEM-512 encapsulation failed: the random generator\n",
        },
        Err(_) => "ML-KEM-512 key generation failed: the random generator\n",
    };
    uart_write(&usart, verdict);

    // Done: sleep with interrupts off, which also ends a simavr run.
    avr_device::interrupt::disable();
    loop {
        avr_device::asm::sleep();
    }
}
