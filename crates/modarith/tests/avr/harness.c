/* Simulator harness for the AVR NTT routines (built by ../avr_ntt.rs).
 * Request: routine id (0xFF ends), 256 little-endian twiddles, 2 factors
 * for the inverse's last layer, n coefficients. Ids 0-2 forward, 3-5 inverse.
 * Reply: the n transformed coefficients. The call is a GPIOR0 window. */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

extern void ntt_fwd_q3329_n256(int16_t *a, const int16_t *zetas);
extern void ntt_fwd_q769_n512(int16_t *a, const int16_t *zetas);
extern void ntt_fwd_q3329_n512(int16_t *a, const int16_t *zetas);
extern void ntt_inv_q3329_n256(int16_t *a, const int16_t *zetas_inv, const int16_t *last);
extern void ntt_inv_q769_n512(int16_t *a, const int16_t *zetas_inv, const int16_t *last);
extern void ntt_inv_q3329_n512(int16_t *a, const int16_t *zetas_inv, const int16_t *last);

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

static int16_t zetas[256];
static int16_t last[2];
static int16_t poly[512];

static void read16(int16_t *dst, uint16_t count)
{
	for (uint16_t i = 0; i < count; i++) {
		uint8_t lo = get();
		dst[i] = (int16_t)(lo | ((uint16_t)get() << 8));
	}
}

int main(void)
{
	UBRR0 = 0;
	UCSR0A = _BV(U2X0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	UCSR0B = _BV(RXEN0) | _BV(TXEN0);
	for (;;) {
		uint8_t id = get();
		if (id > 5)
			break;
		uint16_t n = id % 3 == 0 ? 256 : 512;
		read16(zetas, 256);
		read16(last, 2);
		read16(poly, n);
		GPIOR0 = 1 + id;
		switch (id) {
		case 0: ntt_fwd_q3329_n256(poly, zetas); break;
		case 1: ntt_fwd_q769_n512(poly, zetas); break;
		case 2: ntt_fwd_q3329_n512(poly, zetas); break;
		case 3: ntt_inv_q3329_n256(poly, zetas, last); break;
		case 4: ntt_inv_q769_n512(poly, zetas, last); break;
		default: ntt_inv_q3329_n512(poly, zetas, last); break;
		}
		GPIOR0 = (1 + id) | 0x80;
		for (uint16_t i = 0; i < n; i++) {
			put((uint8_t)poly[i]);
			put((uint8_t)((uint16_t)poly[i] >> 8));
		}
	}
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_enable();
	sleep_cpu();
	return 0;
}
