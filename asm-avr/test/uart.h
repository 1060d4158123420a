/* Polled UART0 for the simulator harnesses of asm-avr/ routines (simavr,
 * ATmega1284p): the host feeds requests and reads replies through it. */
#ifndef ASM_AVR_TEST_UART_H
#define ASM_AVR_TEST_UART_H
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

static void uart_init(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(RXEN0) | _BV(TXEN0);
}

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

/* Waits for the last byte to leave, then stops the simulation (cli; sleep). */
static void stop(void)
{
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_enable();
	sleep_cpu();
}
#endif
