/* Simulator harness for the AVR Ascon permutation (built by ../avr_ascon.rs).
 * Request: rounds (0 ends), 40 state bytes. Reply: the 40 bytes after the
 * timed permutation and a second, ABI-checked one, and the ABI byte. */
#include "../../../../asm-avr/test/uart.h"

extern void ascon_permute_avr(uint64_t *state, uint8_t rounds);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static uint64_t state[5];

int main(void)
{
	uart_init();
	for (;;) {
		uint8_t rounds = get();
		if (rounds == 0)
			break;
		uint8_t *bytes = (uint8_t *)state;
		for (uint8_t i = 0; i < 40; i++)
			bytes[i] = get();
		__asm__ volatile("" : "+r"(rounds) : : "memory");
		GPIOR0 = rounds;
		ascon_permute_avr(state, rounds);
		GPIOR0 = rounds | 0x80;
		__asm__ volatile("" ::: "memory");
		uint8_t abi = avr_abi_check((void (*)(void *, uint8_t))ascon_permute_avr, state, rounds);
		for (uint8_t i = 0; i < 40; i++)
			put(bytes[i]);
		put(abi);
	}
	stop();
	return 0;
}
