/* Simulator harness for the AVR Keccak-f[1600] (built by ../avr_keccak.rs).
 * Protocol: the host sends 200 state bytes; the firmware permutes them inside
 * a GPIOR0 marker window and answers with the 200 bytes and one ABI byte
 * (0 = callee-saved registers and r1 preserved). A zero-length state (first
 * byte 0xFF after the last state) ends the run. */
#include "../../../../asm-avr/test/uart.h"

extern void keccak_f1600_avr(uint64_t *state);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint64_t state[25];

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t more = get();
		if (more != 1)
			break;
		uint8_t *bytes = (uint8_t *)state;
		for (uint8_t i = 0; i < 200; i++)
			bytes[i] = get();
		GPIOR0 = 1;
		keccak_f1600_avr(state);
		GPIOR0 = 1 | 0x80;
		/* a second permutation, with the callee-saved registers checked */
		uint8_t abi = avr_abi_check((void (*)(void *, uint8_t))keccak_f1600_avr, state, 0);
		for (uint8_t i = 0; i < 200; i++)
			put(bytes[i]);
		put(abi);
	}
	stop();
	return 0;
}
