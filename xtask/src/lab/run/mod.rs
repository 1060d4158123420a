//! The firmware driven, and the host half of each exchange with it. A
//! built image runs in simavr or on a board over a serial port (`device`,
//! the harness protocol), in simavr behind a pseudo-terminal (`pty`), or
//! in yasimavr (`yasim`, its windows priced for the AVRxt core by
//! `avrxt`); `symbols` says where its time goes, by function. The host
//! side: the KEM ops (`kems`), the ring ops' reference results
//! (`hosteval`) and the KEM-MQTT/1 handshake (`sensor`, whose measured
//! handshake also gives a sensor image the keys it compiles in).
//!
//! Nothing here builds: it takes an ELF. That is why `build` can sit
//! above it and provision a sensor image's keys from `sensor`.

pub mod avrxt;
pub mod device;
pub mod hosteval;
pub mod kems;
pub mod pty;
pub mod sensor;
pub mod symbols;
pub mod yasim;
