/* The fixed-base table of src/edwards.rs, in flash for the harness's
 * selection test (the firmware gets it from the Rust static). */
	.section .progmem.data, "a", @progbits
	.global base_table
base_table:
	.incbin "src/base_table.bin"	/* avr-gcc runs in the crate directory */
