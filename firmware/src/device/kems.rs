//! Keygen, encaps and decaps of every KEM the image serves, and keygen and
//! decaps in the compact key form of those that have one: keys and
//! ciphertexts in one shared static arena, randomness from a host-sent tape.

use core::hint::black_box;
use core::ptr::addr_of_mut;

use avr_harness::{measure, Io, Op, Status, Uart};
use avr_wire::kem::{arena_len, kem_op_id, reply_len, request_len, Kem, KemOp, SS_LEN, TAPE_LEN};
use kem_common::Tape;

/// Bytes of the shared key/ciphertext arena: the largest need of any served KEM.
const ARENA_LEN: usize = {
    let mut m = 0;
    let mut i = 0;
    while i < KEMS.len() {
        if arena_len(KEMS[i]) > m {
            m = arena_len(KEMS[i]);
        }
        i += 1;
    }
    m
};

/// Keys and ciphertexts of the running operation (one at a time).
static mut ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];
/// The randomness tape of the running operation.
static mut TAPE: [u8; TAPE_LEN] = [0; TAPE_LEN];
/// The shared secret of the running operation.
static mut SS: [u8; SS_LEN] = [0; SS_LEN];

/// `L` arena bytes from offset `OFF`.
///
/// # Safety
/// Single-threaded; the regions one handler borrows do not overlap.
unsafe fn region<const OFF: usize, const L: usize>() -> &'static mut [u8; L] {
    const { assert!(OFF + L <= ARENA_LEN) };
    // SAFETY: in bounds (checked above); exclusive per the caller's contract.
    unsafe { &mut *(addr_of_mut!(ARENA).cast::<u8>().add(OFF) as *mut [u8; L]) }
}

/// The tape and the shared-secret buffer.
///
/// # Safety
/// Single-threaded; one borrow at a time.
unsafe fn tape_and_ss() -> (&'static mut [u8; TAPE_LEN], &'static mut [u8; SS_LEN]) {
    // SAFETY: distinct statics, exclusive per the caller's contract.
    unsafe { (&mut *addr_of_mut!(TAPE), &mut *addr_of_mut!(SS)) }
}

/// Wipes the arena, the tape and the shared secret: no key, randomness or
/// shared secret of an operation stays in RAM after it (`cargo xtask
/// sim-test` reads them back). Outside the measured window, so the cycle
/// counts are unchanged.
fn wipe_statics() {
    // SAFETY: single-threaded; called by a handler after its last use of
    // the regions it borrowed (no borrow of the statics is live).
    unsafe {
        kem_common::wipe_bytes(&mut *addr_of_mut!(ARENA));
        kem_common::wipe_bytes(&mut *addr_of_mut!(TAPE));
        kem_common::wipe_bytes(&mut *addr_of_mut!(SS));
    }
}

/// Writes the last piece of a reply (in the statics) and wipes the statics
/// before its last byte goes out: the host, which sends its next request
/// once the reply is complete, never talks to a firmware busy wiping (a
/// request byte arriving then could be lost, as in yasimavr's 4808).
fn finish_reply(io: &mut Uart, bytes: &[u8]) {
    let Some((&last, head)) = bytes.split_last() else {
        wipe_statics();
        return;
    };
    io.write_bytes(head);
    wipe_statics();
    io.write_byte(last);
}

fn write_prefix(io: &mut Uart, ok: bool, used: usize) {
    io.write_byte(u8::from(!ok));
    io.write_u16(used as u16);
}

macro_rules! kem {
    ($m:ident, $kem:expr, $keygen:path, $encaps:path, $decaps:path) => {
        pub mod $m {
            use super::*;
            const KEM: Kem = $kem;
            const PK: usize = KEM.pk_len();
            const SK: usize = KEM.sk_len();
            const CT: usize = KEM.ct_len();

            #[inline(never)]
            fn k_keygen(rng: &mut Tape<'_>, pk: &mut [u8; PK], sk: &mut [u8; SK]) -> bool {
                $keygen(rng, pk, sk).is_ok()
            }
            #[inline(never)]
            fn k_encaps(pk: &[u8; PK], rng: &mut Tape<'_>, ct: &mut [u8; CT], ss: &mut [u8; SS_LEN]) -> bool {
                match $encaps(pk, rng, ct) {
                    Ok(k) => {
                        *ss = *k.as_bytes();
                        true
                    }
                    Err(_) => false,
                }
            }
            #[inline(never)]
            fn k_decaps(sk: &[u8; SK], ct: &[u8; CT], ss: &mut [u8; SS_LEN]) {
                *ss = *$decaps(sk, ct).as_bytes();
            }

            fn keygen(io: &mut Uart) {
                // SAFETY: disjoint regions, single-threaded.
                let (pk, sk, (tape, _)) = unsafe { (region::<0, PK>(), region::<PK, SK>(), tape_and_ss()) };
                io.read_bytes(tape);
                let mut rng = Tape::new(tape.as_slice());
                let ok = measure(kem_op_id(KEM, KemOp::Keygen), || {
                    k_keygen(black_box(&mut rng), black_box(pk), black_box(sk))
                });
                io.reply(Status::Ok, reply_len(KEM, KemOp::Keygen));
                write_prefix(io, ok, rng.used());
                io.write_bytes(pk);
                finish_reply(io, sk);
            }
            fn encaps(io: &mut Uart) {
                // SAFETY: as above.
                let (pk, ct, (tape, ss)) = unsafe { (region::<0, PK>(), region::<PK, CT>(), tape_and_ss()) };
                io.read_bytes(pk);
                io.read_bytes(tape);
                let mut rng = Tape::new(tape.as_slice());
                let ok = measure(kem_op_id(KEM, KemOp::Encaps), || {
                    k_encaps(black_box(pk), black_box(&mut rng), black_box(ct), black_box(ss))
                });
                io.reply(Status::Ok, reply_len(KEM, KemOp::Encaps));
                write_prefix(io, ok, rng.used());
                io.write_bytes(ct);
                finish_reply(io, ss);
            }
            fn decaps(io: &mut Uart) {
                // SAFETY: as above.
                let (sk, ct, (_, ss)) = unsafe { (region::<0, SK>(), region::<SK, CT>(), tape_and_ss()) };
                io.read_bytes(sk);
                io.read_bytes(ct);
                measure(kem_op_id(KEM, KemOp::Decaps), || {
                    k_decaps(black_box(sk), black_box(ct), black_box(ss))
                });
                io.reply(Status::Ok, reply_len(KEM, KemOp::Decaps));
                finish_reply(io, ss);
            }

            const fn op(o: KemOp, run: fn(&mut Uart)) -> Op<Uart> {
                Op {
                    id: kem_op_id(KEM, o),
                    request_len: request_len(KEM, o),
                    reply_len: reply_len(KEM, o),
                    run,
                }
            }

            /// This KEM's operations.
            pub const OPS: [Op<Uart>; 3] = [
                op(KemOp::Keygen, keygen),
                op(KemOp::Encaps, encaps),
                op(KemOp::Decaps, decaps),
            ];
        }
    };
}

/// The two compact-key operations of a KEM that has the form
/// (`avr_wire::kem::CompactKeyOp`), in the same arena and tape as its three.
#[allow(unused_macros)] // an image of CTRU-Light KEMs alone has none
macro_rules! compact_key {
    ($m:ident, $kem:expr, $keygen:path, $decaps:path) => {
        pub mod $m {
            use super::*;
            use avr_wire::kem::{compact_key_op_id, compact_key_reply_len, compact_key_request_len, CompactKeyOp};
            const KEM: Kem = $kem;
            const SK: usize = KEM.scheme().compact_sk_len();
            const CT: usize = KEM.ct_len();

            #[inline(never)]
            fn k_keygen(rng: &mut Tape<'_>, sk: &mut [u8; SK]) -> bool {
                $keygen(rng, sk).is_ok()
            }
            #[inline(never)]
            fn k_decaps(sk: &[u8; SK], ct: &[u8; CT], ss: &mut [u8; SS_LEN]) {
                *ss = *$decaps(sk, ct).as_bytes();
            }

            const fn id(o: CompactKeyOp) -> u8 {
                match compact_key_op_id(KEM, o) {
                    Some(id) => id,
                    None => panic!("the KEM has no compact key"),
                }
            }

            fn keygen(io: &mut Uart) {
                // SAFETY: disjoint regions, single-threaded.
                let (sk, (tape, _)) = unsafe { (region::<0, SK>(), tape_and_ss()) };
                io.read_bytes(tape);
                let mut rng = Tape::new(tape.as_slice());
                let ok = measure(id(CompactKeyOp::Keygen), || {
                    k_keygen(black_box(&mut rng), black_box(sk))
                });
                io.reply(Status::Ok, compact_key_reply_len(KEM, CompactKeyOp::Keygen));
                write_prefix(io, ok, rng.used());
                finish_reply(io, sk);
            }
            fn decaps(io: &mut Uart) {
                // SAFETY: as above.
                let (sk, ct, (_, ss)) = unsafe { (region::<0, SK>(), region::<SK, CT>(), tape_and_ss()) };
                io.read_bytes(sk);
                io.read_bytes(ct);
                measure(id(CompactKeyOp::Decaps), || {
                    k_decaps(black_box(sk), black_box(ct), black_box(ss))
                });
                io.reply(Status::Ok, compact_key_reply_len(KEM, CompactKeyOp::Decaps));
                finish_reply(io, ss);
            }

            const fn op(o: CompactKeyOp, run: fn(&mut Uart)) -> Op<Uart> {
                Op {
                    id: id(o),
                    request_len: compact_key_request_len(KEM, o),
                    reply_len: compact_key_reply_len(KEM, o),
                    run,
                }
            }

            /// The compact key's operations.
            pub const OPS: [Op<Uart>; 2] = [op(CompactKeyOp::Keygen, keygen), op(CompactKeyOp::Decaps, decaps)];
        }
    };
}

/// Every served KEM's module (`kem!`), `KEMS` and the op groups, from one list.
macro_rules! serve {
    ($( #[$cfg:meta] $m:ident: $kem:expr => ($keygen:path, $encaps:path, $decaps:path)
        $(, $compact:ident: ($ckeygen:path, $cdecaps:path))?; )*) => {
        $(
            #[$cfg]
            kem!($m, $kem, $keygen, $encaps, $decaps);
            $(
                #[$cfg]
                compact_key!($compact, $kem, $ckeygen, $cdecaps);
            )?
        )*

        /// The KEMs this image serves.
        const KEMS: &[Kem] = &[$( #[$cfg] $kem, )*];

        /// The op groups of the KEMs this image serves, in the list's order
        /// (each KEM's three, then its compact key's two where it has one),
        /// then CTRU-Light's decryption product where a CTRU-Light KEM is served.
        const GROUPS: &[&[Op<Uart>]] = &[
            $( #[$cfg] &$m::OPS, $( #[$cfg] &$compact::OPS, )? )*
            #[cfg(any(feature = "ctru-light-sha3", feature = "ctru-light-ascon"))]
            &ctru_product::OPS,
        ];
    };
}

// The KEMs an image can serve, each once: their modules, their ops (in this
// order) and the arena's size follow from this list.
serve! {
    #[cfg(feature = "ml-kem-512")]
    ml_kem_512: Kem::MlKem512 => (kyber512_avr::ml_kem_512::raw::keygen_into, kyber512_avr::ml_kem_512::raw::encapsulate_into, kyber512_avr::ml_kem_512::raw::decapsulate_into),
        ml_kem_512_compact: (kyber512_avr::ml_kem_512::raw::keygen_compact_into, kyber512_avr::ml_kem_512::raw::decapsulate_compact_into);
    #[cfg(feature = "kyber512-r3")]
    kyber512_r3: Kem::Kyber512R3 => (kyber512_avr::kyber512_r3::raw::keygen_into, kyber512_avr::kyber512_r3::raw::encapsulate_into, kyber512_avr::kyber512_r3::raw::decapsulate_into),
        kyber512_r3_compact: (kyber512_avr::kyber512_r3::raw::keygen_compact_into, kyber512_avr::kyber512_r3::raw::decapsulate_compact_into);
    #[cfg(feature = "lightsaber")]
    lightsaber: Kem::LightSaber => (lightsaber_avr::keygen_into, lightsaber_avr::encapsulate_into, lightsaber_avr::decapsulate_into),
        lightsaber_compact: (lightsaber_avr::keygen_compact_into, lightsaber_avr::decapsulate_compact_into);
    #[cfg(feature = "ml-kem-768")]
    ml_kem_768: Kem::MlKem768 => (kyber512_avr::ml_kem_768::raw::keygen_into, kyber512_avr::ml_kem_768::raw::encapsulate_into, kyber512_avr::ml_kem_768::raw::decapsulate_into),
        ml_kem_768_compact: (kyber512_avr::ml_kem_768::raw::keygen_compact_into, kyber512_avr::ml_kem_768::raw::decapsulate_compact_into);
    #[cfg(feature = "ml-kem-1024")]
    ml_kem_1024: Kem::MlKem1024 => (kyber512_avr::ml_kem_1024::raw::keygen_into, kyber512_avr::ml_kem_1024::raw::encapsulate_into, kyber512_avr::ml_kem_1024::raw::decapsulate_into),
        ml_kem_1024_compact: (kyber512_avr::ml_kem_1024::raw::keygen_compact_into, kyber512_avr::ml_kem_1024::raw::decapsulate_compact_into);
    #[cfg(ctru_sha3_kred)]
    ctru_sha3_kred: Kem::CtruSha3Kred => (ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::Kred2x>::keygen_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::Kred2x>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::Kred2x>::decapsulate_into);
    #[cfg(ctru_sha3_montopt)]
    ctru_sha3_montopt: Kem::CtruSha3MontOpt => (ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryOpt>::keygen_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryOpt>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryOpt>::decapsulate_into);
    #[cfg(ctru_sha3_mont)]
    ctru_sha3_mont: Kem::CtruSha3Mont => (ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryPlain>::keygen_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryPlain>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Sha3, ctru_light::MontgomeryPlain>::decapsulate_into);
    #[cfg(ctru_ascon_kred)]
    ctru_ascon_kred: Kem::CtruAsconKred => (ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::Kred2x>::keygen_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::Kred2x>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::Kred2x>::decapsulate_into);
    #[cfg(ctru_ascon_montopt)]
    ctru_ascon_montopt: Kem::CtruAsconMontOpt => (ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryOpt>::keygen_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryOpt>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryOpt>::decapsulate_into);
    #[cfg(ctru_ascon_mont)]
    ctru_ascon_mont: Kem::CtruAsconMont => (ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryPlain>::keygen_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryPlain>::encapsulate_into, ctru_light::CtruLight::<ctru_light::Ascon, ctru_light::MontgomeryPlain>::decapsulate_into);
}

/// Every op of the KEMs this image serves, as one group of the firmware's op table.
pub const OPS: [Op<Uart>; avr_harness::ops_count(GROUPS)] = avr_harness::ops_table(GROUPS);

/// [`avr_wire::kem::OP_CTRU_DECRYPT_PRODUCT`]: c·f mod 256 exactly,
/// for the host's differential test (decapsulation alone could not
/// show a small error: E8 decoding absorbs it).
#[cfg(any(feature = "ctru-light-sha3", feature = "ctru-light-ascon"))]
pub mod ctru_product {
    use super::*;
    use avr_wire::kem::{CTRU_PRODUCT_REPLY_LEN, CTRU_PRODUCT_REQUEST_LEN, OP_CTRU_DECRYPT_PRODUCT};
    use ctru_light::params::{CT_BYTES, SK_PKE_BYTES};

    const _: () = assert!(CTRU_PRODUCT_REQUEST_LEN == SK_PKE_BYTES + CT_BYTES && CTRU_PRODUCT_REPLY_LEN == CT_BYTES);

    fn run(io: &mut Uart) {
        // SAFETY: disjoint regions, single-threaded.
        let (sk, ct, w) = unsafe {
            (
                region::<0, SK_PKE_BYTES>(),
                region::<SK_PKE_BYTES, CT_BYTES>(),
                region::<{ SK_PKE_BYTES + CT_BYTES }, CT_BYTES>(),
            )
        };
        io.read_bytes(sk);
        io.read_bytes(ct);
        *w = ctru_light::hazmat::pke_decrypt_product(sk, ct);
        io.reply(Status::Ok, CT_BYTES as u16);
        finish_reply(io, w);
    }

    /// The op.
    pub const OPS: [Op<Uart>; 1] = [Op {
        id: OP_CTRU_DECRYPT_PRODUCT,
        request_len: CTRU_PRODUCT_REQUEST_LEN as u16,
        reply_len: CTRU_PRODUCT_REPLY_LEN as u16,
        run,
    }];
}
