//! `cargo xtask build-avr`: the images a name selects, their sensor keys
//! provisioned first where they compile them in, then built.

use crate::target::{images, mcu, Mcu};

/// Options of `cargo xtask build-avr`.
#[derive(clap::Parser, Debug)]
pub struct BuildArgs {
    /// The MCU to build for (atmega1284p, atmega4808)
    #[arg(long, default_value = "atmega1284p", value_parser = mcu)]
    pub mcu: Mcu,
    /// The image: rings, an image family (kyber, ml-kem-large, lightsaber,
    /// ctru-light-sha3, ctru-light-ascon), a KEM variant (ml-kem-768,
    /// ctru-sha3-kred, …), mqtt-KEM[-x25519], or all
    #[arg(long, default_value = "rings", value_parser = crate::target::image_name)]
    pub image: String,
}

/// Builds every image `--image` names and prints its sizes.
pub fn run(opts: &BuildArgs) -> Result<(), String> {
    let m = opts.mcu;
    for image in images(m, &opts.image)? {
        let image = crate::run::sensor::with_keys(m, image)?;
        let b = crate::build::avr::build_image(m, &image)?;
        println!(
            "{} {}: {} (flash {} B, static RAM {} B)",
            m.name,
            image.name,
            b.elf.display(),
            b.flash(),
            b.ram()
        );
    }
    Ok(())
}
