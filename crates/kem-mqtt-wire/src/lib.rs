#![no_std]
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![doc = include_str!("../README.md")]

pub mod topics;

/// Protocol version byte, the first byte of every flight.
pub const VERSION: u8 = 0x01;
/// Message type of the ClientHello.
pub const MSG_CLIENT_HELLO: u8 = 0x01;
/// Message type of the BrokerHello.
pub const MSG_BROKER_HELLO: u8 = 0x02;
/// Message type of the ClientFinished.
pub const MSG_CLIENT_FINISHED: u8 = 0x03;
/// Length of the Finished MACs.
pub const MAC_LEN: usize = 32;
/// Length of a ClientFinished: version, type, MAC (the same in every suite).
pub const CLIENT_FINISHED_LEN: usize = 2 + MAC_LEN;
/// Longest client id.
pub const MAX_CLIENT_ID_LEN: usize = 64;
/// Authentication method name in MQTT v5 enhanced authentication.
pub const AUTH_METHOD: &str = "KEM-MQTT/1";

/// Bytes of a record's sequence-number prefix.
pub const SEQ_LEN: usize = 8;
/// Bytes of a record's Ascon-AEAD128 tag.
pub const TAG_LEN: usize = 16;
/// Bytes a record adds to its plaintext.
pub const RECORD_OVERHEAD: usize = SEQ_LEN + TAG_LEN;
/// Longest topic a record can be bound to.
pub const MAX_TOPIC_LEN: usize = 255;
