/* Simulator harness for the AVR E8 decoder (built by ../avr_e8.rs).
 * Request: 1 (0 ends), v[8]. Reply: the timed call's result, a second,
 * ABI-checked call's result, the ABI byte. The timed call is a GPIOR0
 * window. */
#include "../../../../asm-avr/test/uart.h"

extern uint8_t ctru_e8_decode_block_avr(const uint8_t *v);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint8_t v[8], out, out2;

static void call(void *dst, uint8_t unused)
{
	(void)unused;
	*(uint8_t *)dst = ctru_e8_decode_block_avr(v);
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t op = get();
		if (op == 0)
			break;
		for (uint8_t i = 0; i < 8; i++)
			v[i] = get();
		__asm__ volatile("" : "+r"(op) : : "memory");
		GPIOR0 = 1;
		call(&out, 0);
		GPIOR0 = 0x81;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check(call, &out2, 0);
		put(out);
		put(out2);
		put(abi);
	}
	stop();
	return 0;
}
