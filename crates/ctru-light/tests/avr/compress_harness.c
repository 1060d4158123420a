/* Simulator harness for the AVR ciphertext compression (built by
 * ../avr_compress.rs). Request: 1 (0 ends), sigma[8] (little-endian int16),
 * the codeword byte. Reply: the timed call's 8 bytes, a second, ABI-checked
 * call's 8 bytes, the ABI byte. The timed call is a GPIOR0 window. */
#include "../../../../asm-avr/test/uart.h"

extern void ctru_compress_block_avr(const int16_t *sigma, uint8_t codeword, uint8_t *out);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static int16_t sigma[8];
static uint8_t out[8], out2[8];

static void call(void *dst, uint8_t codeword)
{
	ctru_compress_block_avr(sigma, codeword, (uint8_t *)dst);
}

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t op = get();
		if (op == 0)
			break;
		for (uint8_t i = 0; i < 8; i++) {
			uint8_t lo = get();
			sigma[i] = (int16_t)(lo | ((uint16_t)get() << 8));
		}
		uint8_t codeword = get();
		__asm__ volatile("" : "+r"(op), "+r"(codeword) : : "memory");
		GPIOR0 = 1;
		call(out, codeword);
		GPIOR0 = 0x81;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check(call, out2, codeword);
		for (uint8_t i = 0; i < 8; i++)
			put(out[i]);
		for (uint8_t i = 0; i < 8; i++)
			put(out2[i]);
		put(abi);
	}
	stop();
	return 0;
}
