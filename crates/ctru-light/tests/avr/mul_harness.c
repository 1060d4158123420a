/* Simulator harness for the AVR routines of the decryption product
 * modulo 256 (built by ../avr_mul.rs). The timed call is a GPIOR0 window.
 * - 1, a[32], b[32]: the base case. Reply: the timed call's r[64], a
 *   second, ABI-checked call's r[64] (r prefilled with 0x5A and 0xA5: the
 *   routine must not read what it has not written), the ABI byte.
 * - 2, h, r[4h], m[2h] (h = 32, 64 or 128): the Karatsuba recombination.
 *   Reply: the timed call's r[4h], an ABI-checked call's r[4h], the ABI byte.
 * - 0 ends. */
#include "../../../../asm-avr/test/uart.h"

extern void ctru_mul32_avr(const uint8_t *a, const uint8_t *b, uint8_t *r);
extern void ctru_kara_combine32_avr(uint8_t *r, const uint8_t *m);
extern void ctru_kara_combine64_avr(uint8_t *r, const uint8_t *m);
extern void ctru_kara_combine128_avr(uint8_t *r, const uint8_t *m);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint8_t a[32], b[32], r[64], r2[64];
static uint8_t cr[512], cr2[512], cm[256];

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
	}
	stop();
	return 0;
}
