//! Record 0 of NIST's ML-KEM-512 known-answer file, computed on an
//! ATmega1284p with `kyber512-avr` and printed over USART0 as the `.rsp`
//! file writes it (`count`, `seed`, `pk`, `sk`, `ct`, `ss`).
//!
//! `PQCgenKAT_kem` seeds a master AES-256 CTR DRBG with the bytes
//! 0x00..0x2F and draws each record's 48-byte seed from it; the record's own
//! DRBG, seeded with that, is the only randomness key generation (64 bytes,
//! d‖z) and encapsulation (32 bytes, m) get. Nothing here is a stored
//! answer: the host compares the printout with the official file.
#![no_std]
#![no_main]

use avr_device::atmega1284p::{Peripherals, USART0};
use kyber512_avr::ml_kem_512;
use nist_kat::{NistDrbg, DEFAULT_MASTER_SEED};
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

fn uart_byte(usart: &USART0, byte: u8) {
    while usart.ucsr0a().read().udre0().bit_is_clear() {}
    usart.udr0().write(|w| w.set(byte));
}

fn uart_write(usart: &USART0, text: &str) {
    text.bytes().for_each(|b| uart_byte(usart, b));
}

/// `name = HEX\n`, upper-case as NIST writes it.
fn uart_field(usart: &USART0, name: &str, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    uart_write(usart, name);
    uart_write(usart, " = ");
    for b in bytes {
        uart_byte(usart, DIGITS[usize::from(b >> 4)]);
        uart_byte(usart, DIGITS[usize::from(b & 15)]);
    }
    uart_byte(usart, b'\n');
}

#[avr_device::entry]
fn main() -> ! {
    let dp = Peripherals::take().unwrap();
    let usart = dp.USART0;
    uart_init(&usart);

    let mut seed = [0u8; 48];
    NistDrbg::new(&DEFAULT_MASTER_SEED).generate(&mut seed);
    let mut drbg = NistDrbg::new(&seed);

    match ml_kem_512::keygen(&mut drbg) {
        Ok((dk, ek)) => match ml_kem_512::encapsulate(&ek, &mut drbg) {
            Ok((ct, ss)) => {
                uart_write(&usart, "count = 0\n");
                uart_field(&usart, "seed", &seed);
                uart_field(&usart, "pk", ek.as_bytes());
                uart_field(&usart, "sk", dk.as_bytes());
                uart_field(&usart, "ct", ct.as_bytes());
                uart_field(&usart, "ss", ss.as_bytes());
                uart_write(&usart, "\n");
                if ml_kem_512::decapsulate(&dk, &ct) != ss {
                    uart_write(&usart, "decapsulation disagrees with encapsulation\n");
                }
            }
            Err(_) => uart_write(&usart, "encapsulation failed: the random generator\n"),
        },
        Err(_) => uart_write(&usart, "key generation failed: the random generator\n"),
    }

    // Done: sleep with interrupts off, which also ends a simavr run.
    avr_device::interrupt::disable();
    loop {
        avr_device::asm::sleep();
    }
}
