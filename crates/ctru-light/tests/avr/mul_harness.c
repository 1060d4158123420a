/* Simulator harness for the AVR schoolbook base case of the decryption
 * product (built by ../avr_mul.rs). Request: 1 (0 ends), a[32], b[32].
 * Reply: the timed call's r[64], a second, ABI-checked call's r[64] (its
 * r prefilled with 0xA5: the routine must not read what it has not
 * written), the ABI byte. The timed call is a GPIOR0 window. */
#include "../../../../asm-avr/test/uart.h"

extern void ctru_mul32_avr(const uint8_t *a, const uint8_t *b, uint8_t *r);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint8_t a[32], b[32], r[64], r2[64];

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
