/* Simulator harness for the AVR routines of the decryption product
 * modulo 256 (built by ../avr_mul.rs). The timed call is a GPIOR0 window.
 * - 1, a[32], b[32]: the base case. Reply: the timed call's r[64], a
 *   second, ABI-checked call's r[64] (r prefilled with 0x5A and 0xA5: the
 *   routine must not read what it has not written), the ABI byte, the
 *   guard byte.
 * - 2, h, r[4h], m[2h] (h = 32, 64 or 128): the Karatsuba recombination.
 *   Reply: the timed call's r[4h], an ABI-checked call's r[4h], the ABI
 *   byte, the guard byte.
 * - 0 ends.
 * Every output buffer has GUARD bytes on both sides; the guard byte is 1 if
 * any of them changed (a write out of bounds). */
#include "../../../../asm-avr/test/uart.h"

extern void ctru_mul32_avr(const uint8_t *a, const uint8_t *b, uint8_t *r);
extern void ctru_kara_combine32_avr(uint8_t *r, const uint8_t *m);
extern void ctru_kara_combine64_avr(uint8_t *r, const uint8_t *m);
extern void ctru_kara_combine128_avr(uint8_t *r, const uint8_t *m);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

#define GUARD 16
#define GUARD_BYTE 0xE7
static uint8_t a[32], b[32], cm[256];
static uint8_t r_buf[GUARD + 64 + GUARD], r2_buf[GUARD + 64 + GUARD];
static uint8_t cr_buf[GUARD + 512 + GUARD], cr2_buf[GUARD + 512 + GUARD];
#define r (r_buf + GUARD)
#define r2 (r2_buf + GUARD)
#define cr (cr_buf + GUARD)
#define cr2 (cr2_buf + GUARD)

/* Fills both guards of an output of len bytes. */
static void guard(uint8_t *out, uint16_t len)
{
	for (uint8_t i = 1; i <= GUARD; i++) {
		out[-(int16_t)i] = GUARD_BYTE;
		out[len - 1 + i] = GUARD_BYTE;
	}
}

/* 1 if a guard of out (len bytes) changed. */
static uint8_t guard_broken(const uint8_t *out, uint16_t len)
{
	uint8_t bad = 0;
	for (uint8_t i = 1; i <= GUARD; i++)
		bad |= (out[-(int16_t)i] != GUARD_BYTE) | (out[len - 1 + i] != GUARD_BYTE);
	return bad;
}

static void combine(void *dst, uint8_t h)
{
	if (h == 32)
		ctru_kara_combine32_avr((uint8_t *)dst, cm);
	else if (h == 64)
		ctru_kara_combine64_avr((uint8_t *)dst, cm);
	else
		ctru_kara_combine128_avr((uint8_t *)dst, cm);
}

static void combine_request(void)
{
	uint8_t h = get();
	uint16_t len = 4 * (uint16_t)h;
	for (uint16_t i = 0; i < len; i++)
		cr2[i] = cr[i] = get();
	for (uint16_t i = 0; i < 2 * (uint16_t)h; i++)
		cm[i] = get();
	guard(cr, len);
	guard(cr2, len);
	__asm__ volatile("" : "+r"(h) : : "memory");
	GPIOR0 = 1;
	combine(cr, h);
	GPIOR0 = 0x81;
	__asm__ volatile("" ::: "memory");
	uint8_t abi = avr_abi_check(combine, cr2, h);
	for (uint16_t i = 0; i < len; i++)
		put(cr[i]);
	for (uint16_t i = 0; i < len; i++)
		put(cr2[i]);
	put(abi);
	put(guard_broken(cr, len) | guard_broken(cr2, len));
}

static void call(void *dst, uint8_t unused)
{
	(void)unused;
	ctru_mul32_avr(a, b, (uint8_t *)dst);
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t op = get();
		if (op == 0)
			break;
		if (op == 2) {
			combine_request();
			continue;
		}
		for (uint8_t i = 0; i < 32; i++)
			a[i] = get();
		for (uint8_t i = 0; i < 32; i++)
			b[i] = get();
		for (uint8_t i = 0; i < 64; i++) {
			r[i] = 0x5A;
			r2[i] = 0xA5;
		}
		guard(r, 64);
		guard(r2, 64);
		__asm__ volatile("" : "+r"(op) : : "memory");
		GPIOR0 = 1;
		call(r, 0);
		GPIOR0 = 0x81;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check(call, r2, 0);
		for (uint8_t i = 0; i < 64; i++)
			put(r[i]);
		for (uint8_t i = 0; i < 64; i++)
			put(r2[i]);
		put(abi);
		put(guard_broken(r, 64) | guard_broken(r2, 64));
	}
	stop();
	return 0;
}
