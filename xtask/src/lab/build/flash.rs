//! `cargo xtask flash`: writes a firmware image to a board with avrdude.
//!
//! The image is the ELF the benchmarks and tests run, turned into Intel HEX
//! (`avr-objcopy`: code, the `.data` image and, on the megaAVR-0, the
//! read-only data mapped into the data space). avrdude then programs it
//! through the board's bootloader or programmer:
//!
//! - ATmega1284p: `-c arduino` (an Optiboot-style STK500v1 bootloader on
//!   the board's serial port; `-D`: the bootloader erases page by page);
//! - ATmega4808: `-c serialupdi` (a USB serial adapter on the UPDI pin, as
//!   on the Curiosity Nano's debugger or a plain adapter with a resistor).
//!
//! Tested by flashing the `rings` image through avrdude into a simulated
//! Optiboot on a pseudo-terminal ([`Optiboot`]), which keeps what avrdude
//! writes: the bytes must be the image's (CI step "flash").

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use avr_serial::serialport::TTYPort;

use avr_wire::app::Policy;

use crate::build::avr;
use crate::target::{self, Mcu};
use crate::util;

/// Options of `cargo xtask flash`.
#[derive(clap::Parser, Debug)]
pub struct FlashArgs {
    /// The MCU on the board
    #[arg(long, default_value = "atmega1284p", value_parser = target::mcu)]
    pub mcu: Mcu,
    /// The image to flash: rings, a KEM image (kyber512-r3, ml-kem-512,
    /// lightsaber, ctru-…), a sensor harness (`mqtt-<kem>[-x25519]`) or the
    /// sensor application (`app-<kem>[-x25519]`, with --keys)
    #[arg(long, value_parser = crate::target::image_name)]
    pub image: String,
    /// The board's serial port (bootloader) or the UPDI adapter's, e.g. /dev/ttyUSB0
    #[arg(long)]
    pub port: String,
    /// avrdude's programmer id (default: arduino on the ATmega1284p,
    /// serialupdi on the ATmega4808)
    #[arg(long)]
    pub programmer: Option<String>,
    /// The programmer's baud rate (default: 115200)
    #[arg(long)]
    pub baud: Option<u32>,
    /// A sensor image's keys: a `kem-mqtt provision` key file, compiled into
    /// the image (the board then runs the handshake on its own, for
    /// `kem-mqtt serial-bridge`)
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// The sensor application's seconds between readings (default 60)
    #[arg(long, value_name = "S", requires = "keys",
          value_parser = clap::value_parser!(u32).range(i64::from(Policy::INTERVAL_S.0)..=i64::from(Policy::INTERVAL_S.1)))]
    pub interval: Option<u32>,
    /// The sensor application's records per session before a new handshake (default 1440)
    #[arg(long, value_name = "N", requires = "keys",
          value_parser = clap::value_parser!(u32).range(i64::from(Policy::REKEY_RECORDS.0)..=i64::from(Policy::REKEY_RECORDS.1)))]
    pub rekey_records: Option<u32>,
    /// The sensor application's session age in seconds before a new handshake (default 86400)
    #[arg(long, value_name = "S", requires = "keys",
          value_parser = clap::value_parser!(u32).range(i64::from(Policy::REKEY_S.0)..=i64::from(Policy::REKEY_S.1)))]
    pub rekey_seconds: Option<u32>,
    /// Use the image already built
    #[arg(long)]
    pub no_build: bool,
    /// Print the avrdude command instead of running it
    #[arg(long)]
    pub dry_run: bool,
}

/// avrdude's name for the part (`m1284p`, `m4808` …).
fn part(mcu: Mcu) -> String {
    mcu.name.replacen("atmega", "m", 1)
}

/// The programmer a board of `mcu` is flashed with by default: the
/// Optiboot/Arduino bootloader, the Mega 2560's stk500v2 one (`wiring`),
/// the Nano Every's on-board UPDI bridge, or a serial UPDI adapter.
pub fn default_programmer(mcu: Mcu) -> &'static str {
    mcu.facts().programmer
}

/// avrdude's arguments: write `hex` to the flash of `mcu` through
/// `programmer` on `port` at `baud`, then verify (avrdude reads it back).
pub fn avrdude_args(mcu: Mcu, hex: &Path, port: &str, programmer: &str, baud: u32) -> Vec<String> {
    let part = part(mcu);
    let mut args: Vec<String> = ["-p", part.as_str(), "-c", programmer, "-P", port, "-b"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(baud.to_string());
    if matches!(programmer, "arduino" | "wiring") {
        // A bootloader erases each page as it writes it (the Arduino IDE
        // passes -D to both).
        args.push("-D".into());
    }
    args.push("-U".into());
    args.push(format!("flash:w:{}:i", hex.display()));
    args
}

/// Intel HEX of the flash contents of `elf` (beside it).
pub fn hex_of(elf: &Path) -> Result<PathBuf, String> {
    let hex = elf.with_extension("hex");
    util::run(
        Command::new("avr-objcopy")
            .args([
                "-O",
                "ihex",
                "-R",
                ".eeprom",
                "-R",
                ".fuse",
                "-R",
                ".lock",
                "-R",
                ".signature",
            ])
            .arg(elf)
            .arg(&hex),
    )?;
    Ok(hex)
}

/// `cargo xtask flash --mcu M --image I --port P [--programmer X] [--baud B] [--no-build] [--dry-run]`.
pub fn run(o: &FlashArgs) -> Result<(), String> {
    let images = crate::target::images(o.mcu, &o.image)?;
    let [image] = images.as_slice() else {
        return Err(format!("--image {} names {} images: flash one", o.image, images.len()));
    };
    let image = match &o.keys {
        Some(path) => {
            if !image.name.starts_with("mqtt-") && !image.is_sensor_app() {
                return Err(format!(
                    "--keys provisions a sensor image (mqtt-… or app-…), not {}",
                    image.name
                ));
            }
            let keys = kem_mqtt_host::keys::SensorKeys::load(path)
                .map_err(|e| format!("--keys {}: {e} (write one with `kem-mqtt provision`)", path.display()))?;
            let d = Policy::DEFAULT;
            let policy = Policy {
                interval_s: o.interval.unwrap_or(d.interval_s),
                rekey_records: o.rekey_records.unwrap_or(d.rekey_records),
                rekey_s: o.rekey_seconds.unwrap_or(d.rekey_s),
            };
            if policy != d && !image.is_sensor_app() {
                return Err(format!(
                    "--interval and --rekey-* set the sensor application's policy (app-…), not {}'s",
                    image.name
                ));
            }
            crate::run::sensor::provisioned_image(o.mcu, image.clone().with_policy(policy), &keys)?
        }
        None => crate::run::sensor::with_keys(o.mcu, image.clone())?,
    };
    let elf = avr::image_elf(o.mcu, &image, o.no_build)?;
    let hex = hex_of(&elf)?;
    let programmer = o.programmer.as_deref().unwrap_or(default_programmer(o.mcu));
    let args = avrdude_args(o.mcu, &hex, &o.port, programmer, o.baud.unwrap_or(115_200));
    if o.dry_run {
        println!("avrdude {}", args.join(" "));
        return Ok(());
    }
    util::run(Command::new("avrdude").args(&args))
}

/// A simulated Optiboot (STK500v1) bootloader of an ATmega1284p behind a
/// pseudo-terminal: it answers what avrdude's `arduino` programmer asks
/// and keeps the pages it is given, so a test can compare them with the
/// image. Dropped, it stops.
pub struct Optiboot {
    path: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<u8>>>,
}

/// The ATmega1284p's signature bytes.
const SIGNATURE_1284P: [u8; 3] = [0x1E, 0x97, 0x05];
const STK_OK: u8 = 0x10;
const STK_INSYNC: u8 = 0x14;
const CRC_EOP: u8 = 0x20;

impl Optiboot {
    /// Starts the bootloader on a new pty.
    pub fn start() -> Result<Optiboot, String> {
        let (mut master, path) = crate::run::pty::open_pty(Duration::from_millis(5))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut flash = vec![0xFFu8; 128 * 1024];
            let mut bytes = Bytes {
                pty: &mut master,
                stop: &flag,
            };
            serve_stk500(&mut bytes, &mut flash);
            flash
        });
        Ok(Optiboot {
            path,
            stop,
            thread: Some(thread),
        })
    }

    /// The pty's path: avrdude's `-P`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Stops the bootloader and returns its flash (erased bytes 0xFF).
    pub fn finish(mut self) -> Vec<u8> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}

impl Drop for Optiboot {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Blocking byte reads from the pty until stopped.
struct Bytes<'a> {
    pty: &'a mut TTYPort,
    stop: &'a AtomicBool,
}

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let mut b = [0u8];
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return None;
            }
            match self.pty.read(&mut b) {
                Ok(1) => return Some(b[0]),
                Ok(_) => {}
                Err(e) if crate::run::pty::hung_up(&e) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => {}
            }
        }
    }

    fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        (0..n).map(|_| self.next()).collect()
    }

    fn answer(&mut self, body: &[u8]) {
        let mut frame = vec![STK_INSYNC];
        frame.extend_from_slice(body);
        frame.push(STK_OK);
        let _ = self.pty.write_all(&frame);
    }
}

/// The STK500v1 subset Optiboot implements: every command ends with
/// CRC_EOP; the answer is INSYNC, its bytes, OK.
fn serve_stk500(io: &mut Bytes, flash: &mut [u8]) {
    let mut address = 0usize; // bytes
    while let Some(cmd) = io.next() {
        let (args, body): (usize, Vec<u8>) = match cmd {
            0x30 | 0x50 | 0x51 | 0x52 => (0, Vec::new()), // sync, enter/leave progmode, erase
            // Parameters: hardware version 2, software 4.4 (Optiboot).
            0x41 => {
                let Some(p) = io.next() else { return };
                (0, vec![if p == 0x80 { 2 } else { 4 }])
            }
            0x42 => (20, Vec::new()), // device parameters
            0x45 => {
                // Extended parameters: a length byte (their count + 1), then them.
                let Some(n) = io.next() else { return };
                (usize::from(n).saturating_sub(1), Vec::new())
            }
            0x55 => {
                // Load address: a word address, little-endian.
                let Some(a) = io.take(2) else { return };
                address = usize::from(u16::from_le_bytes([a[0], a[1]])) * 2;
                (0, Vec::new())
            }
            0x56 => (4, vec![0]), // universal (SPI) command: answered with 0
            0x64 => {
                // Program page: length (big-endian), memory type, data.
                let Some(h) = io.take(3) else { return };
                let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
                let Some(data) = io.take(len) else { return };
                if h[2] == b'F' {
                    if let Some(dst) = flash.get_mut(address..address + len) {
                        dst.copy_from_slice(&data);
                    }
                }
                (0, Vec::new())
            }
            0x74 => {
                // Read page: length (big-endian), memory type.
                let Some(h) = io.take(3) else { return };
                let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
                let page = flash.get(address..address + len).map(<[u8]>::to_vec);
                (0, page.unwrap_or_else(|| vec![0xFF; len]))
            }
            0x75 => (0, SIGNATURE_1284P.to_vec()),
            _ => (0, Vec::new()),
        };
        if io.take(args).is_none() {
            return;
        }
        match io.next() {
            Some(CRC_EOP) => io.answer(&body),
            Some(_) => {
                let _ = io.pty.write_all(&[0x15]); // NOSYNC
            }
            None => return,
        }
    }
}

/// CI: flashes the built `rings` image of the ATmega1284p with avrdude
/// (`arduino` programmer, as `cargo xtask flash` runs it) into [`Optiboot`]
/// on a pty; the bootloader's flash must hold the image's bytes.
pub fn check() -> Result<(), String> {
    let mcu = target::mcu("atmega1284p")?;
    let elf = avr::image_elf(mcu, &target::Image::rings(), true)?;
    let hex = hex_of(&elf)?;
    let bin = elf.with_extension("bin");
    util::run(
        Command::new("avr-objcopy")
            .args(["-O", "binary", "-R", ".eeprom"])
            .arg(&elf)
            .arg(&bin),
    )?;
    let image = std::fs::read(&bin).map_err(|e| format!("cannot read {}: {e}", bin.display()))?;
    let boot = Optiboot::start()?;
    let args = avrdude_args(mcu, &hex, boot.path(), "arduino", 115_200);
    let out = Command::new("avrdude")
        .args(&args)
        .output()
        .map_err(|e| format!("cannot run avrdude ({e}): run `cargo xtask setup`"))?;
    let flash = boot.finish();
    if !out.status.success() {
        return Err(format!(
            "avrdude {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if flash.get(..image.len()) != Some(&image[..]) {
        let at = flash.iter().zip(&image).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!("the flashed bytes differ from the image from byte {at}"));
    }
    println!(
        "avrdude wrote and verified {} B of the rings image through a simulated Optiboot (STK500v1) on a pty",
        image.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The CI step on its own (needs avrdude and the built rings image).
    #[test]
    #[ignore]
    fn avrdude_flashes_the_simulated_optiboot() {
        check().unwrap();
    }

    /// The application's policy: with keys only, within its bounds.
    #[test]
    fn policy_options_need_keys_and_stay_in_bounds() {
        use clap::Parser;
        let base = ["flash", "--image", "app-ctru-light-ascon", "--port", "/dev/null"];
        let parse = |extra: &[&str]| FlashArgs::try_parse_from(base.iter().chain(extra));
        let o = parse(&["--keys", "k.json", "--interval", "5", "--rekey-records", "30"]).unwrap();
        assert_eq!(
            (o.interval, o.rekey_records, o.rekey_seconds),
            (Some(5), Some(30), None)
        );
        for bad in [
            &["--interval", "5"][..],
            &["--keys", "k", "--interval", "0"],
            &["--keys", "k", "--interval", "86401"],
            &["--keys", "k", "--rekey-records", "0"],
            &["--keys", "k", "--rekey-seconds", "59"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn avrdude_gets_the_part_programmer_and_image_of_each_mcu() {
        let m1284 = target::mcu("atmega1284p").unwrap();
        let m4808 = target::mcu("atmega4808").unwrap();
        let hex = Path::new("/tmp/x.hex");
        assert_eq!(
            avrdude_args(m1284, hex, "/dev/ttyUSB0", default_programmer(m1284), 115_200).join(" "),
            "-p m1284p -c arduino -P /dev/ttyUSB0 -b 115200 -D -U flash:w:/tmp/x.hex:i"
        );
        assert_eq!(
            avrdude_args(m4808, hex, "/dev/ttyACM0", default_programmer(m4808), 230_400).join(" "),
            "-p m4808 -c serialupdi -P /dev/ttyACM0 -b 230400 -U flash:w:/tmp/x.hex:i"
        );
        let m2560 = target::mcu("atmega2560").unwrap();
        assert_eq!(
            avrdude_args(m2560, hex, "/dev/ttyACM0", default_programmer(m2560), 115_200).join(" "),
            "-p m2560 -c wiring -P /dev/ttyACM0 -b 115200 -D -U flash:w:/tmp/x.hex:i"
        );
        // --image and --port are required; a bad MCU is refused.
        assert!(FlashArgs::try_parse_from(["flash", "--image", "rings"]).is_err());
        assert!(FlashArgs::try_parse_from(["flash", "--port", "/dev/ttyUSB0"]).is_err());
        assert!(FlashArgs::try_parse_from(["flash", "--mcu", "atmega8", "--image", "rings", "--port", "p"]).is_err());
        let o = FlashArgs::try_parse_from(["flash", "--image", "rings", "--port", "p", "--dry-run"]).unwrap();
        assert!(o.dry_run && o.programmer.is_none() && o.baud.is_none());
    }
}
