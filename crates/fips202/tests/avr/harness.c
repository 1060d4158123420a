/* Simulator harness for the AVR Keccak-f[1600] (built by ../avr_keccak.rs).
 * Protocol: the host sends 200 state bytes; the firmware permutes them inside
 * a GPIOR0 marker window and answers with the 200 bytes and one ABI byte
 * (0 = callee-saved registers and r1 preserved). A zero-length state (first
 * byte 0xFF after the last state) ends the run. */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

extern void keccak_f1600_avr(uint64_t *state);
extern uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2);

static void put(uint8_t c)
{
	while (!(UCSR0A & _BV(UDRE0)))
		;
	UDR0 = c;
}

static uint8_t get(void)
{
	while (!(UCSR0A & _BV(RXC0)))
		;
	return UDR0;
}

static uint64_t state[25];

int main(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(RXEN0) | _BV(TXEN0);
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
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_enable();
	sleep_cpu();
	return 0;
}
