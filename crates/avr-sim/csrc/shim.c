/*
 * Thin C shim over libsimavr for the avr-sim crate.
 *
 * Keeps the hot loop (one instruction per avr_run, SP tracking, UART input
 * pacing) in C so the Rust side only crosses the FFI boundary once per
 * request. All state lives in one heap object owned by Rust.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>

#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>
#include <simavr/sim_io.h>
#include <simavr/sim_irq.h>
#include <simavr/avr_uart.h>
#include <simavr/avr_adc.h>

#define R_SPL_DATA 0x5D
#define R_SPH_DATA 0x5E

typedef struct {
	uint8_t id;
	uint64_t cycle;
	uint16_t sp;     /* SP when the marker was written */
	uint16_t min_sp; /* lowest SP since the last opening marker */
} shim_event_t;

typedef struct {
	avr_t *avr;
	avr_irq_t *uart_in;
	int xon;
	uint8_t *in_buf;
	size_t in_len, in_pos, in_cap;
	uint8_t *out_buf;
	size_t out_len, out_cap;
	shim_event_t *ev;
	size_t ev_len, ev_cap;
	int sp_pending; /* between `out SPH` and `out SPL` */
	uint16_t min_sp;     /* since the last opening marker */
	uint16_t min_sp_all; /* since reset */
	uint16_t marker_addr;
	int window_open;   /* between an opening and a closing marker */
	uint32_t *prof;    /* per flash word: instructions executed inside windows */
	size_t prof_len;   /* words; 0 when profiling is off */
} shim_t;

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	void *p = realloc(*buf, n * elem);
	if (!p)
		return -1;
	*buf = p;
	*cap = n;
	return 0;
}

static uint16_t sp_now(avr_t *avr)
{
	return (uint16_t)(avr->data[R_SPL_DATA] | (avr->data[R_SPH_DATA] << 8));
}

static void on_uart_out(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	shim_t *s = param;
	if (grow((void **)&s->out_buf, &s->out_cap, s->out_len + 1, 1) == 0)
		s->out_buf[s->out_len++] = (uint8_t)value;
}

static void on_xon(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	shim_t *s = param;
	if (value)
		s->xon = 1;
}

static void on_xoff(struct avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq;
	shim_t *s = param;
	if (value)
		s->xon = 0;
}

static void on_marker(avr_t *avr, avr_io_addr_t addr, uint8_t v, void *param)
{
	shim_t *s = param;
	avr->data[addr] = v;
	uint16_t sp = sp_now(avr);
	if (!(v & 0x80))
		s->min_sp = sp; /* a window opens: track from here */
	s->window_open = !(v & 0x80);
	if (grow((void **)&s->ev, &s->ev_cap, s->ev_len + 1, sizeof(shim_event_t)) == 0) {
		shim_event_t *e = &s->ev[s->ev_len++];
		e->id = v;
		e->cycle = avr->cycle;
		e->sp = sp;
		e->min_sp = s->min_sp;
	}
}

/* Silence simavr's chatter; keep errors on stderr. */
static void quiet_logger(avr_t *avr, const int level, const char *fmt, va_list ap)
{
	(void)avr;
	if (level <= LOG_ERROR) {
		fputs("simavr: ", stderr);
		vfprintf(stderr, fmt, ap);
	}
}

static void no_sleep(avr_t *avr, avr_cycle_count_t how_long)
{
	(void)avr;
	(void)how_long;
}

/*
 * Error codes: -1 unknown mcu, -2 cannot read firmware, -3 init failed,
 * -4 oom, -5 no uart0, -7 `ramend` below the part's own.
 *
 * `ramend` 0 keeps the part's data space; otherwise it is the last data
 * address (e.g. 0xFFFF: 64 KB), set before avr_init, which allocates
 * ramend + 1 bytes of data space and resets SP to ramend. Only the size of
 * the data array changes: the core, its I/O and its instruction timings are
 * the part's.
 */
int shim_new(const char *elf_path, const char *mcu, uint32_t freq, uint16_t marker_addr, uint16_t ramend,
	     shim_t **out)
{
	*out = NULL;
	avr_global_logger_set(quiet_logger);
	elf_firmware_t *fw = calloc(1, sizeof(*fw));
	if (!fw)
		return -4;
	if (elf_read_firmware(elf_path, fw) != 0) {
		free(fw);
		return -2;
	}
	avr_t *avr = avr_make_mcu_by_name(mcu);
	if (!avr) {
		free(fw->flash);
		free(fw);
		return -1;
	}
	if (ramend) {
		if (ramend < avr->ramend) {
			free(avr);
			free(fw->flash);
			free(fw);
			return -7;
		}
		avr->ramend = ramend;
	}
	if (avr_init(avr) != 0) {
		free(fw->flash);
		free(fw);
		return -3;
	}
	avr->log = LOG_ERROR;
	avr->frequency = freq;
	avr->sleep = no_sleep;
	/* A 5 V board: the ADC's AVCC and AREF references. */
	avr->vcc = avr->avcc = avr->aref = 5000;
	fw->frequency = freq;
	strncpy(fw->mmcu, mcu, sizeof(fw->mmcu) - 1);
	avr_load_firmware(avr, fw);
	free(fw->flash);
	free(fw->eeprom);
	free(fw);

	shim_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -4;
	s->avr = avr;
	s->min_sp = 0xFFFF;
	s->min_sp_all = 0xFFFF;
	s->marker_addr = marker_addr;

	uint32_t flags = 0;
	if (avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags) != 0) {
		free(s);
		return -5;
	}
	flags &= ~(AVR_UART_FLAG_POLL_SLEEP | AVR_UART_FLAG_STDIO);
	avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);

	s->uart_in = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
	avr_irq_t *out_irq = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT);
	avr_irq_t *xon = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON);
	avr_irq_t *xoff = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF);
	if (!s->uart_in || !out_irq || !xon || !xoff) {
		free(s);
		return -5;
	}
	avr_irq_register_notify(out_irq, on_uart_out, s);
	avr_irq_register_notify(xon, on_xon, s);
	avr_irq_register_notify(xoff, on_xoff, s);
	avr_register_io_write(avr, marker_addr, on_marker, s);
	*out = s;
	return 0;
}

void shim_free(shim_t *s)
{
	if (!s)
		return;
	avr_terminate(s->avr);
	free(s->avr);
	free(s->in_buf);
	free(s->out_buf);
	free(s->ev);
	free(s->prof);
	free(s);
}

/* Turns the per-instruction profile of marker windows on (zeroed) or off. */
int shim_profile(shim_t *s, int on)
{
	free(s->prof);
	s->prof = NULL;
	s->prof_len = 0;
	if (!on)
		return 0;
	size_t words = ((size_t)s->avr->flashend + 1) / 2;
	s->prof = calloc(words, sizeof(uint32_t));
	if (!s->prof)
		return -4;
	s->prof_len = words;
	return 0;
}

/* Copies up to cap profile counters into buf, zeroes them; returns how many. */
size_t shim_profile_take(shim_t *s, uint32_t *buf, size_t cap)
{
	size_t n = s->prof_len < cap ? s->prof_len : cap;
	memcpy(buf, s->prof, n * sizeof(uint32_t));
	memset(s->prof, 0, s->prof_len * sizeof(uint32_t));
	return n;
}

size_t shim_profile_len(const shim_t *s)
{
	return s->prof_len;
}

int shim_push_input(shim_t *s, const uint8_t *data, size_t len)
{
	/* compact consumed input first */
	if (s->in_pos > 0) {
		memmove(s->in_buf, s->in_buf + s->in_pos, s->in_len - s->in_pos);
		s->in_len -= s->in_pos;
		s->in_pos = 0;
	}
	if (grow((void **)&s->in_buf, &s->in_cap, s->in_len + len, 1) != 0)
		return -4;
	memcpy(s->in_buf + s->in_len, data, len);
	s->in_len += len;
	return 0;
}

size_t shim_pending_input(const shim_t *s)
{
	return s->in_len - s->in_pos;
}

size_t shim_output_len(const shim_t *s)
{
	return s->out_len;
}

/* Moves up to cap output bytes into buf; returns how many. */
size_t shim_take_output(shim_t *s, uint8_t *buf, size_t cap)
{
	size_t n = s->out_len < cap ? s->out_len : cap;
	memcpy(buf, s->out_buf, n);
	memmove(s->out_buf, s->out_buf + n, s->out_len - n);
	s->out_len -= n;
	return n;
}

size_t shim_event_count(const shim_t *s)
{
	return s->ev_len;
}

void shim_event(const shim_t *s, size_t i, uint8_t *id, uint64_t *cycle, uint16_t *sp, uint16_t *min_sp)
{
	const shim_event_t *e = &s->ev[i];
	*id = e->id;
	*cycle = e->cycle;
	*sp = e->sp;
	*min_sp = e->min_sp;
}

void shim_clear_events(shim_t *s)
{
	s->ev_len = 0;
}

uint64_t shim_cycle(const shim_t *s)
{
	return s->avr->cycle;
}

uint32_t shim_pc(const shim_t *s)
{
	return s->avr->pc;
}

uint16_t shim_sp(const shim_t *s)
{
	return sp_now(s->avr);
}

/* The lowest SP since the last opening marker (since the start for a
 * firmware that writes none), and the top of data space (the SP at reset):
 * the difference is the deepest the stack went. */
uint16_t shim_min_sp(const shim_t *s)
{
	return s->min_sp;
}

/* The lowest SP since reset (markers do not reset it). */
uint16_t shim_min_sp_all(const shim_t *s)
{
	return s->min_sp_all;
}

uint16_t shim_ramend(const shim_t *s)
{
	return (uint16_t)s->avr->ramend;
}

/* Sets ADC input `channel` (simavr's ADC_IRQ_ADC0 + n, or
 * ADC_IRQ_TEMP) to `millivolts`; -1 if the MCU has no such input. */
int shim_set_adc(shim_t *s, uint32_t channel, uint32_t millivolts)
{
	avr_irq_t *irq = avr_io_getirq(s->avr, AVR_IOCTL_ADC_GETIRQ, (int)channel);
	if (!irq)
		return -1;
	avr_raise_irq(irq, millivolts);
	return 0;
}

/* Copies `len` bytes of data space from `addr` (SRAM, registers, I/O) into
 * `out`; -1 (nothing copied) if the range leaves data space. */
int shim_read_data(const shim_t *s, uint32_t addr, uint8_t *out, size_t len)
{
	uint32_t end = (uint32_t)s->avr->ramend + 1;
	if (addr > end || len > end - addr)
		return -1;
	memcpy(out, s->avr->data + addr, len);
	return 0;
}

/*
 * Runs until: out_len >= want_out (returns 0), the firmware stopped with
 * `cli; sleep` (1), it crashed (2), or cycle >= cycle_limit (3).
 */
int shim_run(shim_t *s, uint64_t cycle_limit, size_t want_out)
{
	avr_t *avr = s->avr;
	for (;;) {
		if (want_out && s->out_len >= want_out)
			return 0;
		if (avr->cycle >= cycle_limit)
			return 3;
		while (s->xon && s->in_pos < s->in_len)
			avr_raise_irq(s->uart_in, s->in_buf[s->in_pos++]);

		/* Which instruction runs now: `out SPH`/`out SPL` bracket a
		 * two-instruction SP update whose middle state is not a real SP. */
		uint32_t pc = avr->pc;
		if (s->prof_len && s->window_open && (pc >> 1) < s->prof_len)
			s->prof[pc >> 1]++;
		uint16_t op = (uint16_t)(avr->flash[pc] | (avr->flash[pc + 1] << 8));
		int state = avr_run(avr);
		if ((op & 0xF800) == 0xB800) {
			unsigned a = ((op >> 5) & 0x30) | (op & 0x0F);
			if (a == R_SPH_DATA - 0x20)
				s->sp_pending = 1;
			else if (a == R_SPL_DATA - 0x20)
				s->sp_pending = 0;
		}
		if (!s->sp_pending) {
			uint16_t sp = sp_now(avr);
			if (sp < s->min_sp)
				s->min_sp = sp;
			if (sp < s->min_sp_all)
				s->min_sp_all = sp;
		}
		if (state == cpu_Done)
			return 1;
		if (state == cpu_Crashed)
			return 2;
	}
}
