/*
 * Start-up code for megaAVR-0 parts (ATmega4808 …) linked with avr-gcc 5.4,
 * which has no device spec for them (see xtask/src/mega0.rs): the firmware is
 * linked with -mmcu=avrxmega3 -nostartfiles and this file instead of the
 * device's crt. __do_copy_data / __do_clear_bss come from libgcc (.init4).
 */

#define SREG 0x3F
#define SPL 0x3D
#define SPH 0x3E
/* ATmega4808: 36 vectors (reset and 1–35), 2 words each (jmp). */

/*
 * Vector n jumps to __vector_n, the firmware's handler (an
 * `extern "avr-interrupt"` function exported under that name), or, where
 * the firmware has none, to __bad_interrupt: weak aliases, as avr-libc's
 * crt does on the classic parts. (Every vector went to __bad_interrupt
 * before: the sensor's first RTC wake-up restarted it.)
 */
	.macro	vector n
	.weak	__vector_\n
	.set	__vector_\n, __bad_interrupt
	jmp	__vector_\n
	.endm

	.section .vectors,"ax",@progbits
	.global __vectors
__vectors:
	jmp	__init
	.irp	n, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35
	vector	\n
	.endr

	.text
	.global __bad_interrupt
__bad_interrupt:
	jmp	__vectors

	.section .init0,"ax",@progbits
	.global __init
__init:

	.section .init2,"ax",@progbits
	clr	r1
	out	SREG, r1
	ldi	r28, lo8(__stack)
	ldi	r29, hi8(__stack)
	out	SPL, r28
	out	SPH, r29

	.section .init9,"ax",@progbits
	call	main
1:	rjmp	1b
