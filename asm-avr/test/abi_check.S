/* uint8_t avr_abi_check(void (*routine)(void *, uint8_t), void *arg, uint8_t arg2)
 *
 * Test helper for the simulator harnesses of asm-avr/ routines: loads a
 * pattern into every callee-saved register (r2-r17, r28, r29), calls
 * routine(arg, arg2), and returns how many of them changed, plus one if r1
 * is not zero afterwards (the avr-gcc ABI the Rust code relies on). */
	.text
	.global avr_abi_check
avr_abi_check:
	.irp n, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,28,29
	push r\n
	.endr
	movw r30, r24		; Z = routine
	movw r24, r22		; first argument
	mov r22, r20		; second argument
	.irp n, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,28,29
	ldi r26, 0x5a + \n
	mov r\n, r26
	.endr
	icall
	clr r24
	tst r1
	breq 1f
	inc r24
1:
	.irp n, 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,28,29
	ldi r26, 0x5a + \n
	cpse r\n, r26
	inc r24
	.endr
	.irp n, 29,28,17,16,15,14,13,12,11,10,9,8,7,6,5,4,3,2
	pop r\n
	.endr
	clr r25
	clr r1
	ret
