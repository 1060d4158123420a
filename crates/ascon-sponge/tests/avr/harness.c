/* Simulator harness for the AVR Ascon permutation (built by ../avr_ascon.rs).
 * Request: rounds (0 ends), 40 state bytes. Reply: the 40 bytes after the
 * timed permutation and a second, ABI-checked one, and the ABI byte. */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

extern void ascon_permute_avr(uint64_t *state, uint8_t rounds);
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

static uint64_t state[5];

int main(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(RXEN0) | _BV(TXEN0);
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
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_enable();
	sleep_cpu();
	return 0;
}
