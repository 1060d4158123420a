/*
 * Start-up code for megaAVR-0 parts (ATmega4808 …) linked with avr-gcc 5.4,
 * which has no device spec for them (see xtask/src/mega0.rs): the firmware is
 * linked with -mmcu=avrxmega3 -nostartfiles and this file instead of the
 * device's crt. __do_copy_data / __do_clear_bss come from libgcc (.init4).
 */

#define SREG 0x3F
#define SPL 0x3D
#define SPH 0x3E
/* ATmega4808: 36 vectors, 2 words each (jmp). */
#define VECTORS 36

	.section .vectors,"ax",@progbits
	.global __vectors
__vectors:
	jmp	__init
	.rept	VECTORS - 1
	jmp	__bad_interrupt
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
