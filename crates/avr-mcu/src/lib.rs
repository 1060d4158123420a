#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
//! One record per AVR part ([`Mcu`]): what this project knows of a part,
//! written once. Build scripts (which peripheral layout, which compact
//! variant, which `-mmcu` for the assembler), the firmware's clock, the
//! lab's board table, flashing and simulation read it here; none of them
//! names a part.
//!
//! Adding a classic megaAVR part is one record in [`ALL`] (and, if it is to
//! be measured, `measured: true`: it then gets a row in the board table).
//! A new family needs a [`Family`] variant and, in the firmware harness,
//! its peripheral layout (`crates/avr-harness`); see this crate's README.
//!
//! ```
//! let m = avr_mcu::by_name("atmega4808").unwrap();
//! assert_eq!((m.flash, m.sram), (48 * 1024, 6 * 1024));
//! assert!(m.is_small() && m.assembler_mcu() == "avrxmega3");
//! assert_eq!(avr_mcu::by_name("atmega1284p").unwrap().assembler_mcu(), "atmega1284p");
//! ```

/// A part's core and peripheral family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Classic megaAVR (ATmega328p, 1284p, 2560): AVRe+ core, flash read
    /// with `lpm`/`elpm`, simulated by simavr.
    Classic,
    /// megaAVR 0-series (ATmega4808/4809 …): AVRxt core, flash mapped into
    /// data space, UPDI; avr-gcc 5.4 knows only its core (`avrxmega3`);
    /// simulated by yasimavr.
    Mega0,
}

/// The simulator a part's images run in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simulator {
    /// simavr (classic parts).
    Simavr,
    /// yasimavr (megaAVR 0-series).
    Yasimavr,
}

/// One AVR part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mcu {
    /// LLVM's and avr-gcc's name (`-C target-cpu`, `-mmcu`).
    pub name: &'static str,
    /// The board people know it from, if any (`""`: none).
    pub board: &'static str,
    /// Its family.
    pub family: Family,
    /// Flash bytes.
    pub flash: u32,
    /// SRAM bytes.
    pub sram: u32,
    /// Data-space address of the first SRAM byte (after the register file
    /// and I/O: 0x100 on most classic parts, 0x200 on the 2560 with its
    /// extended I/O; on the megaAVR 0-series SRAM ends at 0x3FFF). The
    /// stack starts at its last byte, [`Mcu::ramend`].
    pub sram_start: u32,
    /// EEPROM bytes.
    pub eeprom: u32,
    /// Measured by this project (`cargo xtask boards`, `docs/boards.md`).
    pub measured: bool,
    /// Its datasheet's supply currents, where this project prices energy
    /// for it (`None`: not looked up).
    pub currents: Option<Currents>,
    /// avrdude's programmer for its board by default: the Optiboot/Arduino
    /// bootloader (`arduino`), the Mega 2560's stk500v2 one (`wiring`), the
    /// Nano Every's on-board UPDI bridge (`jtag2updi`), a serial UPDI
    /// adapter (`serialupdi`).
    pub programmer: &'static str,
}

/// A part's supply currents from its datasheet: typical values at 25 °C,
/// the inputs of the sensor application's energy estimate (an estimate:
/// what this project measures is cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Currents {
    /// Active at [`CLOCK_HZ`], 5 V (µA).
    pub active_ua: u32,
    /// Asleep between readings, with the wake-up timer and the watchdog (nA).
    pub sleep_na: u32,
    /// Where the figures come from, and how they were derived.
    pub source: &'static str,
}

/// The clock every image of this project runs at, and the simulators
/// simulate: 20 MHz.
pub const CLOCK_HZ: u32 = 20_000_000;

const KB: u32 = 1024;

const fn classic(name: &'static str, board: &'static str, flash: u32, sram: u32, eeprom: u32) -> Mcu {
    Mcu {
        name,
        board,
        family: Family::Classic,
        flash: flash * KB,
        sram: sram * KB,
        sram_start: 0x100,
        eeprom,
        measured: true,
        currents: None,
        programmer: "arduino",
    }
}

const fn mega0(name: &'static str, flash: u32, sram: u32) -> Mcu {
    Mcu {
        name,
        board: "",
        family: Family::Mega0,
        flash: flash * KB,
        sram: sram * KB,
        sram_start: 0x4000 - sram * KB,
        eeprom: 256,
        measured: false,
        currents: None,
        programmer: "serialupdi",
    }
}

/// Every part this project knows, smallest SRAM first.
pub const ALL: &[Mcu] = &[
    mega0("atmega808", 8, 1),
    mega0("atmega809", 8, 1),
    mega0("atmega1608", 16, 2),
    mega0("atmega1609", 16, 2),
    classic("atmega328p", "Arduino Uno", 32, 2, KB),
    mega0("atmega3208", 32, 4),
    mega0("atmega3209", 32, 4),
    Mcu {
        board: "ATmega4808 boards",
        measured: true,
        currents: Some(Currents {
            active_ua: 8_500,
            // Power-down with everything stopped 0.1 µA + the RTC on
            // OSCULP32K 1.2 µA + the WDT 0.7 µA.
            sleep_na: 2_000,
            source: "megaAVR 0-series ATmega809/1609/3209/4809 48-pin datasheet (DS40002016B), Tables 4-5 to 4-7 \
                     (the ATmega4808 is the same die family; check against its own DS40002173): Active 20 MHz, \
                     5 V: 8.5 mA typ; Power-down, all peripherals stopped, 3 V: 0.1 µA, plus the RTC on the 32 kHz \
                     ULP oscillator (the periodic wake-up) 1.2 µA and the WDT 0.7 µA: 2.0 µA",
        }),
        ..mega0("atmega4808", 48, 6)
    },
    Mcu {
        board: "Arduino Nano Every",
        measured: true,
        programmer: "jtag2updi",
        ..mega0("atmega4809", 48, 6)
    },
    Mcu {
        programmer: "wiring",
        sram_start: 0x200,
        ..classic("atmega2560", "Arduino Mega 2560", 256, 8, 4 * KB)
    },
    Mcu {
        currents: Some(Currents {
            // 5.2 mA at 8 MHz × 20/8.
            active_ua: 13_000,
            sleep_na: 4_200,
            source: "ATmega164A/PA/324A/PA/644A/PA/1284/P datasheet (Atmel 8272E–AVR–04/2013), §28.1 DC \
                     characteristics: the ATmega324PA row (Table 28-5; the ATmega1284P row was not available to \
                     us): Active 8 MHz, 5 V: 5.2 mA typ, extrapolated linearly to 20 MHz (13 mA); Power-down, WDT \
                     enabled, 3 V: 4.2 µA typ (the watchdog is the wake-up timer; no 5 V row is given)",
        }),
        ..classic("atmega1284p", "ATmega1284p boards", 128, 16, 4 * KB)
    },
];

/// The part named `name` (LLVM's name), if it is in [`ALL`].
pub fn by_name(name: &str) -> Option<Mcu> {
    ALL.iter().copied().find(|m| m.name == name)
}

/// [`by_name`] for constants: a name not in [`ALL`] fails the build that
/// evaluates it.
pub const fn facts(name: &str) -> Mcu {
    let mut i = 0;
    while i < ALL.len() {
        let (a, b) = (ALL[i].name.as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return ALL[i];
            }
        }
        i += 1;
    }
    panic!("not an MCU of avr_mcu::ALL")
}

/// The parts this project measures (its board table), smallest SRAM first.
pub fn measured() -> impl Iterator<Item = Mcu> {
    ALL.iter().copied().filter(|m| m.measured)
}

impl Mcu {
    /// A small megaAVR 0-series part (48 KB of flash or less, hence 6 KB
    /// of SRAM or less): crates pick their compact variants for it.
    pub const fn is_small(&self) -> bool {
        matches!(self.family, Family::Mega0) && self.flash <= 48 * KB
    }

    /// A part with 8 KB of SRAM or less (the megaAVR 0-series, the
    /// ATmega2560, the ATmega328p): crates pick their stack-saving
    /// variants for it, which the KEM-MQTT sensor needs beside its static
    /// buffers.
    pub const fn is_small_sram(&self) -> bool {
        self.sram <= 8 * KB
    }

    /// avr-gcc 5.4's `-mmcu` for assembling: the part itself, or for a
    /// megaAVR 0-series part (which it does not know) its core family.
    pub const fn assembler_mcu(&self) -> &'static str {
        match self.family {
            Family::Classic => self.name,
            Family::Mega0 => "avrxmega3",
        }
    }

    /// The simulator its images run in.
    pub const fn simulator(&self) -> Simulator {
        match self.family {
            Family::Classic => Simulator::Simavr,
            Family::Mega0 => Simulator::Yasimavr,
        }
    }

    /// Data-space address of the last SRAM byte (RAMEND), where the stack
    /// starts.
    pub const fn ramend(&self) -> u32 {
        self.sram_start + self.sram - 1
    }

    /// Whether code reaches all of its flash with 16-bit pointers (`lpm`);
    /// above 64 KB constants past the first 64 KB need `elpm`.
    pub const fn flash_fits_16_bits(&self) -> bool {
        self.flash <= 64 * KB
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_sorted_by_sram() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name), "{} twice", a.name);
        }
        assert!(ALL.windows(2).all(|w| w[0].sram <= w[1].sram));
    }

    /// RAMEND as each datasheet gives it (the 2560's extended I/O moves its
    /// SRAM up by 256 B; the 0-series' SRAM ends below the mapped flash).
    #[test]
    fn ramend_is_the_datasheets() {
        for (name, ramend) in [
            ("atmega328p", 0x08FF),
            ("atmega1284p", 0x40FF),
            ("atmega2560", 0x21FF),
            ("atmega4808", 0x3FFF),
            ("atmega4809", 0x3FFF),
            ("atmega3208", 0x3FFF),
            ("atmega808", 0x3FFF),
        ] {
            assert_eq!(facts(name).ramend(), ramend, "{name}");
        }
        assert_eq!(facts("atmega4808").sram_start, 0x2800);
    }

    #[test]
    fn the_five_measured_parts_and_their_facts() {
        let names: [&str; 5] = core::array::from_fn(|i| measured().nth(i).unwrap().name);
        assert_eq!(
            names,
            ["atmega328p", "atmega4808", "atmega4809", "atmega2560", "atmega1284p"]
        );
        assert_eq!(measured().count(), 5);
        let m = facts("atmega2560");
        assert_eq!((m.flash, m.sram, m.programmer), (256 * KB, 8 * KB, "wiring"));
        assert!(!m.flash_fits_16_bits() && facts("atmega328p").flash_fits_16_bits());
        assert_eq!(facts("atmega4809").programmer, "jtag2updi");
        assert_eq!(facts("atmega1284p").simulator(), Simulator::Simavr);
        assert_eq!(facts("atmega4808").simulator(), Simulator::Yasimavr);
    }

    #[test]
    fn small_parts_are_the_mega0_ones_of_48_kb_or_less() {
        let small: [bool; 11] = core::array::from_fn(|i| ALL[i].is_small());
        for (m, s) in ALL.iter().zip(small) {
            assert_eq!(s, m.family == Family::Mega0, "{}", m.name);
        }
        assert!(by_name("atmega2560").is_some_and(|m| !m.is_small() && m.is_small_sram()));
        assert!(by_name("atmega1284p").is_some_and(|m| !m.is_small_sram()));
        assert!(by_name("attiny85").is_none());
    }
}
