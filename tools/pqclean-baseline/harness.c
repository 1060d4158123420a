/*
 * Measurement harness for PQClean's `clean` ML-KEM (FIPS 203) on AVR, and
 * the same program for the host (the reference the AVR output is checked
 * against).
 *
 * Build with -DMLKEM_SET=512, 768 or 1024 and -I the set's `clean` folder.
 *
 * Runs, with the deterministic randombytes of randombytes.c:
 *   window 4: empty (the cost of a marker pair)
 *   window 1: crypto_kem_keypair(pk, sk)
 *   window 2: crypto_kem_enc(ct, ss_enc, pk)
 *   window 3: crypto_kem_dec(ss_dec, ct, sk)
 *   (no window) crypto_kem_dec of ct with one bit flipped: the implicit
 *   rejection path, so that its bytes are checked too.
 *   window 5 (AVR only, after the output): randombytes of 64 bytes, the
 *   share of this RNG in the keygen window (32 bytes in encaps).
 * A window is: GPIOR0 = id before the call, GPIOR0 = id | 0x80 after it
 * (the simulator stamps the cycle counter and SP on each write).
 *
 * Output (UART0 on AVR, stdout on the host):
 *   "PQCB", set (u16 LE), pk, sk, ct, ss_enc, ss_dec, ss_reject
 * and on AVR only, after it, per op (keygen, encaps, decaps) three u16 LE:
 *   heap bytes used (painted), lowest stack byte written (painted), SP at
 *   the opening marker; then __heap_start (u16 LE).
 * Then AVR stops with `cli; sleep`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "randombytes.h"

#if MLKEM_SET == 512
#define NS(x) PQCLEAN_MLKEM512_CLEAN_##x
#elif MLKEM_SET == 768
#define NS(x) PQCLEAN_MLKEM768_CLEAN_##x
#elif MLKEM_SET == 1024
#define NS(x) PQCLEAN_MLKEM1024_CLEAN_##x
#else
#error "define MLKEM_SET as 512, 768 or 1024"
#endif

#define PK_BYTES NS(CRYPTO_PUBLICKEYBYTES)
#define SK_BYTES NS(CRYPTO_SECRETKEYBYTES)
#define CT_BYTES NS(CRYPTO_CIPHERTEXTBYTES)
#define SS_BYTES NS(CRYPTO_BYTES)

static uint8_t pk[PK_BYTES];
static uint8_t sk[SK_BYTES];
static uint8_t ct[CT_BYTES];
static uint8_t ss_enc[SS_BYTES];
static uint8_t ss_dec[SS_BYTES];
static uint8_t ss_rej[SS_BYTES];

#if defined(__AVR__) && defined(PQCB_MEGA0)
/* megaAVR-0 (ATmega4808 family), linked for the generic avrxmega3 core:
 * avr-libc 2.0 has no header for these parts, so the few registers used
 * are named here (datasheet DS40002018 addresses). */
#define REG8(a) (*(volatile uint8_t *)(a))
/* Markers go to a RAM byte: yasimavr watches data writes, not I/O. */
volatile uint8_t pqcb_marker;
#define GPIOR0 pqcb_marker
#define SP (*(volatile uint16_t *)0x003D)
#define USART0_TXDATAL REG8(0x0802)
#define USART0_STATUS REG8(0x0804)
#define USART0_CTRLB REG8(0x0806)
#define USART0_CTRLC REG8(0x0807)
#define USART0_BAUDL REG8(0x0808)
#define USART0_BAUDH REG8(0x0809)
#define PORTA_DIRSET REG8(0x0401)
#define SLPCTRL_CTRLA REG8(0x0050)
#define USART_DREIF 0x20
#define USART_TXCIF 0x40
#define cli() __asm__ volatile("cli" ::: "memory")
#define sleep_enable() (SLPCTRL_CTRLA = 0x05) /* power-down, enabled */
#define sleep_cpu() __asm__ volatile("sleep" ::: "memory")
#elif defined(__AVR__)
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>
#endif

#ifdef __AVR__
#define MARK(v) (GPIOR0 = (uint8_t)(v))

#define PAINT 0xA5
/* Free memory runs from __heap_start (end of .bss) up to the stack. */
extern uint8_t __heap_start;
static uint8_t *paint_top;
static uint16_t stats[3][3];

#ifdef PQCB_MEGA0
/* USART0 at F_CPU/16, 8N1, TX on PA0 (as the project's avr-harness). */
static void uart_init(void) {
    PORTA_DIRSET = 0x01;
    USART0_BAUDL = 64;
    USART0_BAUDH = 0;
    USART0_CTRLC = 0x03;
    USART0_CTRLB = 0x40;
}

static void out_byte(uint8_t b) {
    while (!(USART0_STATUS & USART_DREIF)) {
    }
    USART0_STATUS = USART_TXCIF;
    USART0_TXDATAL = b;
}

static void out_flush(void) {
    while (!(USART0_STATUS & USART_TXCIF)) {
    }
}
#else
static void uart_init(void) {
    UBRR0H = 0;
    UBRR0L = 0;
    UCSR0A = _BV(U2X0);
    UCSR0B = _BV(TXEN0);
    UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
}

static void out_byte(uint8_t b) {
    while (!(UCSR0A & _BV(UDRE0))) {
    }
    UDR0 = b;
}

static void out_flush(void) {
    while (!(UCSR0A & _BV(UDRE0))) {
    }
}
#endif

/* Fills free memory, from the heap start to a little below this
 * function's own frame, with PAINT. */
static void __attribute__((noinline)) paint(void) {
    uint8_t *top = (uint8_t *)SP - 32;
    for (uint8_t *p = &__heap_start; p < top; p++) {
        *p = PAINT;
    }
    paint_top = top;
}

/* After an operation: heap high-water mark (first run of 16 painted bytes
 * above __heap_start) and the lowest byte the stack wrote (first unpainted
 * byte above that run, below paint_top). */
static void __attribute__((noinline)) measure(uint8_t op, uint16_t sp_open) {
    uint8_t *p = &__heap_start;
    uint8_t run = 0;
    while (p < paint_top && run < 16) {
        run = (*p == PAINT) ? run + 1 : 0;
        p++;
    }
    uint8_t *heap_end = p - run;
    while (p < paint_top && *p == PAINT) {
        p++;
    }
    stats[op][0] = (uint16_t)(heap_end - &__heap_start);
    stats[op][1] = (uint16_t)p;
    stats[op][2] = sp_open;
}

/* Window 5, in its own frame (main's stays as small as before). */
static void __attribute__((noinline)) time_rng(void) {
    uint8_t scratch[64];
    MARK(5);
    randombytes(scratch, sizeof scratch);
    MARK(0x85);
    __asm__ volatile("" : : "r"(scratch) : "memory");
}

static void stop(void) {
    out_flush();
    cli();
    sleep_enable();
    sleep_cpu();
    for (;;) {
    }
}
#else
#include <stdio.h>
#define MARK(v) ((void)0)
static void out_byte(uint8_t b) {
    putchar(b);
}
#endif

static void out_bytes(const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        out_byte(b[i]);
    }
}

static void out_u16(uint16_t v) {
    out_byte((uint8_t)v);
    out_byte((uint8_t)(v >> 8));
}

int main(void) {
#ifdef __AVR__
    uint16_t sp_open;
    uart_init();
#define BEFORE(op) do { paint(); sp_open = SP; } while (0)
#define AFTER(op) measure((op), sp_open)
#else
#define BEFORE(op) ((void)0)
#define AFTER(op) ((void)0)
#endif

    MARK(4);
    MARK(0x84);

    BEFORE(0);
    MARK(1);
    NS(crypto_kem_keypair)(pk, sk);
    MARK(0x81);
    AFTER(0);

    BEFORE(1);
    MARK(2);
    NS(crypto_kem_enc)(ct, ss_enc, pk);
    MARK(0x82);
    AFTER(1);

    BEFORE(2);
    MARK(3);
    NS(crypto_kem_dec)(ss_dec, ct, sk);
    MARK(0x83);
    AFTER(2);

    /* Implicit rejection: a ciphertext with one bit flipped. */
    ct[CT_BYTES / 2] ^= 0x01;
    NS(crypto_kem_dec)(ss_rej, ct, sk);
    ct[CT_BYTES / 2] ^= 0x01;

    out_bytes((const uint8_t *)"PQCB", 4);
    out_u16(MLKEM_SET);
    out_bytes(pk, sizeof pk);
    out_bytes(sk, sizeof sk);
    out_bytes(ct, sizeof ct);
    out_bytes(ss_enc, sizeof ss_enc);
    out_bytes(ss_dec, sizeof ss_dec);
    out_bytes(ss_rej, sizeof ss_rej);
#ifdef __AVR__
    for (uint8_t op = 0; op < 3; op++) {
        for (uint8_t k = 0; k < 3; k++) {
            out_u16(stats[op][k]);
        }
    }
    out_u16((uint16_t)&__heap_start);
    time_rng();
    stop();
#endif
    return 0;
}
