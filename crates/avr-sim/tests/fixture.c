/* Test firmware for avr-sim (built by tests/sim.rs with avr-gcc). */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

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

/* Uses 64 bytes of stack plus its frame. */
__attribute__((noinline)) static uint8_t deep(uint8_t seed)
{
	volatile uint8_t buf[64];
	for (uint8_t i = 0; i < sizeof buf; i++)
		buf[i] = seed + i;
	return buf[seed & 63];
}

int main(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(RXEN0) | _BV(TXEN0);

	/* echo: n, then n bytes, each returned plus one */
	uint8_t n = get();
	for (uint8_t i = 0; i < n; i++)
		put(get() + 1);

	GPIOR0 = 7; /* empty window */
	GPIOR0 = 7 | 0x80;

	GPIOR0 = 9;
	uint8_t r = deep(get());
	GPIOR0 = 9 | 0x80;
	put(r);

	/* spin for a 32-bit count received little-endian (speed test) */
	uint32_t count = get();
	count |= (uint32_t)get() << 8;
	count |= (uint32_t)get() << 16;
	count |= (uint32_t)get() << 24;
	GPIOR0 = 11;
	for (volatile uint32_t i = 0; i < count; i++)
		;
	GPIOR0 = 11 | 0x80;
	put('!');
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_enable();
	sleep_cpu();
	return 0;
}
