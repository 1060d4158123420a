/* Simulator harness for the CRT block lift (built by ../avr_crt.rs).
 * Request: 1 (0 ends), packed[10], w[8] (little-endian int16), inv_r (int16).
 * Reply: out[8] of the timed call, out[8] of a second, ABI-checked call,
 * the ABI byte. The timed call is a GPIOR0 window. */
#include "../../../../asm-avr/test/uart.h"

extern void crt_lift_block_q769_q3329(const uint8_t *packed, const int16_t *w, uint8_t *out, int16_t inv_r);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint8_t packed[10], out[8], out2[8];
static int16_t w[8], inv_r;

static void call(void *dst, uint8_t unused)
{
	(void)unused;
	crt_lift_block_q769_q3329(packed, w, (uint8_t *)dst, inv_r);
}

static int16_t get16(void)
{
	uint8_t lo = get();
	return (int16_t)(lo | ((uint16_t)get() << 8));
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t op = get();
		if (op == 0)
			break;
		for (uint8_t i = 0; i < 10; i++)
			packed[i] = get();
		for (uint8_t i = 0; i < 8; i++)
			w[i] = get16();
		inv_r = get16();
		__asm__ volatile("" : "+r"(op) : : "memory");
		GPIOR0 = 1;
		call(out, 0);
		GPIOR0 = 0x81;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check(call, out2, 0);
		for (uint8_t i = 0; i < 8; i++)
			put(out[i]);
		for (uint8_t i = 0; i < 8; i++)
			put(out2[i]);
		put(abi);
	}
	stop();
	return 0;
}
