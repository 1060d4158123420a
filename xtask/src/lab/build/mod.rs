//! Images built and put on a board: the AVR cross build, its sizes and
//! call graph (`avr`), the megaAVR-0 link wrapper (`mega0_link`), and the
//! two commands a user runs, `cargo xtask build-avr` (`build_avr`) and
//! `cargo xtask flash` (`flash`). Which images and MCUs exist is
//! `crate::target`; an image that compiles sensor keys in gets those of the
//! measured handshake (`crate::run::sensor`) first, hence above `run`.

pub mod avr;
pub mod build_avr;
pub mod flash;
pub mod mega0_link;
