//! Benchmark, differential-test and KAT firmware: serves the operations of the
//! catalog (`firmware::ops`, `firmware::kem_ops`) that its cargo features
//! select over UART0 with the `avr-harness` protocol.
//!
//! - `rings` (default): the 25 modarith NTT operations;
//! - `kyber` (`ml-kem`, `kyber-r3`), `saber`, `ctru-sha3`, `ctru-ascon`
//!   (narrowed by `ctru-kred2x` / `ctru-montopt` / `ctru-mont`): keygen,
//!   encaps and decaps of each KEM, randomness from a host-sent tape, keys
//!   and ciphertexts in one shared static arena.
//!
//! Build it with `cargo xtask build-avr [--mcu M] [--group G]`; on the host
//! this binary only explains that.

#![cfg_attr(target_arch = "avr", no_std, no_main)]

#[cfg(not(target_arch = "avr"))]
fn main() {
    eprintln!(
        "this is AVR firmware: build it with `cargo xtask build-avr`, run it with `cargo xtask sim-test`/`bench`"
    );
}

#[cfg(target_arch = "avr")]
mod device {
    #[cfg(any(feature = "rings", kem, mqtt))]
    use avr_harness::Op;
    use avr_harness::Uart;

    #[cfg(feature = "rings")]
    mod rings {
        use core::hint::black_box;
        use core::ptr::addr_of_mut;

        use avr_harness::{measure, Io, Op, Status, Uart};
        use firmware::{op_id, Kind, Ring};

        /// Largest polynomial any ring uses.
        const MAX_N: usize = 512;
        static mut BUF_A: [i16; MAX_N] = [0; MAX_N];
        static mut BUF_B: [i16; MAX_N] = [0; MAX_N];
        static mut BUF_C: [i16; MAX_N] = [0; MAX_N];

        /// The first `N` coefficients of a buffer as an array.
        ///
        /// # Safety
        /// Single-threaded; each buffer is borrowed once at a time by one handler.
        unsafe fn buf<const N: usize>(b: *mut [i16; MAX_N]) -> &'static mut [i16; N] {
            const { assert!(N <= MAX_N) };
            // SAFETY: N ≤ MAX_N, same element type, exclusive per the caller's contract.
            unsafe { &mut *(b as *mut [i16; N]) }
        }

        macro_rules! ring {
            ($m:ident, $ring:expr, $T:ty) => {
                pub mod $m {
                    use super::*;
                    type T = $T;
                    const RING: Ring = $ring;
                    const N: usize = RING.n();

                    #[inline(never)]
                    fn k_forward(a: &mut [i16; N]) {
                        T::forward(a)
                    }
                    #[inline(never)]
                    fn k_inverse(a: &mut [i16; N]) {
                        T::inverse(a)
                    }
                    #[inline(never)]
                    fn k_base_mul(a: &[i16; N], b: &[i16; N], c: &mut [i16; N]) {
                        T::base_mul(a, b, c)
                    }
                    #[inline(never)]
                    fn k_base_mul_acc(a: &[i16; N], b: &[i16; N], c: &mut [i16; N]) {
                        T::base_mul_acc(a, b, c)
                    }
                    #[inline(never)]
                    fn k_base_inv(a: &mut [i16; N]) -> u8 {
                        T::base_inv(a).unwrap_u8()
                    }

                    fn forward(io: &mut Uart) {
                        // SAFETY: one borrow per buffer, single-threaded.
                        let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                        io.read_i16s(a);
                        measure(op_id(RING, Kind::Forward), || k_forward(black_box(a)));
                        io.reply(Status::Ok, Kind::Forward.reply_len(N));
                        io.write_i16s(a);
                    }
                    fn inverse(io: &mut Uart) {
                        // SAFETY: as above.
                        let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                        io.read_i16s(a);
                        measure(op_id(RING, Kind::Inverse), || k_inverse(black_box(a)));
                        io.reply(Status::Ok, Kind::Inverse.reply_len(N));
                        io.write_i16s(a);
                    }
                    fn base_mul(io: &mut Uart) {
                        // SAFETY: as above.
                        let (a, b, c) = unsafe {
                            (
                                buf::<N>(addr_of_mut!(BUF_A)),
                                buf::<N>(addr_of_mut!(BUF_B)),
                                buf::<N>(addr_of_mut!(BUF_C)),
                            )
                        };
                        io.read_i16s(a);
                        io.read_i16s(b);
                        measure(op_id(RING, Kind::BaseMul), || {
                            k_base_mul(black_box(a), black_box(b), black_box(c))
                        });
                        io.reply(Status::Ok, Kind::BaseMul.reply_len(N));
                        io.write_i16s(c);
                    }
                    fn base_mul_acc(io: &mut Uart) {
                        // SAFETY: as above.
                        let (a, b, c) = unsafe {
                            (
                                buf::<N>(addr_of_mut!(BUF_A)),
                                buf::<N>(addr_of_mut!(BUF_B)),
                                buf::<N>(addr_of_mut!(BUF_C)),
                            )
                        };
                        io.read_i16s(a);
                        io.read_i16s(b);
                        io.read_i16s(c);
                        measure(op_id(RING, Kind::BaseMulAcc), || {
                            k_base_mul_acc(black_box(a), black_box(b), black_box(c))
                        });
                        io.reply(Status::Ok, Kind::BaseMulAcc.reply_len(N));
                        io.write_i16s(c);
                    }
                    fn base_inv(io: &mut Uart) {
                        // SAFETY: as above.
                        let a = unsafe { buf::<N>(addr_of_mut!(BUF_A)) };
                        io.read_i16s(a);
                        let ok = measure(op_id(RING, Kind::BaseInv), || k_base_inv(black_box(a)));
                        io.reply(Status::Ok, Kind::BaseInv.reply_len(N));
                        io.write_byte(ok);
                        io.write_i16s(a);
                    }

                    const fn op(kind: Kind, run: fn(&mut Uart)) -> Op<Uart> {
                        Op {
                            id: op_id(RING, kind),
                            request_len: kind.request_len(N),
                            reply_len: kind.reply_len(N),
                            run,
                        }
                    }

                    /// This ring's operations.
                    pub const OPS: [Op<Uart>; 5] = [
                        op(Kind::Forward, forward),
                        op(Kind::Inverse, inverse),
                        op(Kind::BaseMul, base_mul),
                        op(Kind::BaseMulAcc, base_mul_acc),
                        op(Kind::BaseInv, base_inv),
                    ];
                }
            };
        }

        ring!(ctru769, Ring::Ctru769, modarith::rings::Ctru769);
        ring!(ctru3329, Ring::Ctru3329, modarith::rings::Ctru3329);
        ring!(kyber, Ring::Kyber, modarith::rings::Kyber);
        ring!(saber3329, Ring::Saber3329, modarith::rings::Saber3329);
        ring!(saber7681, Ring::Saber7681, modarith::rings::Saber7681);
    }

    #[cfg(kem)]
    mod kems {
        use core::hint::black_box;
        use core::ptr::addr_of_mut;

        use avr_harness::{measure, Io, Op, Status, Uart};
        use firmware::kem::{kem_op_id, Kem, KemOp, SS_LEN, TAPE_LEN};
        use rand_core::{CryptoRng, RngCore};

        /// The KEMs this image serves.
        const KEMS: &[Kem] = &[
            #[cfg(feature = "ml-kem")]
            Kem::MlKem512,
            #[cfg(feature = "kyber-r3")]
            Kem::Kyber512R3,
            #[cfg(feature = "saber")]
            Kem::LightSaber,
            #[cfg(ctru_sha3_kred)]
            Kem::CtruSha3Kred,
            #[cfg(ctru_sha3_montopt)]
            Kem::CtruSha3MontOpt,
            #[cfg(ctru_sha3_mont)]
            Kem::CtruSha3Mont,
            #[cfg(ctru_ascon_kred)]
            Kem::CtruAsconKred,
            #[cfg(ctru_ascon_montopt)]
            Kem::CtruAsconMontOpt,
            #[cfg(ctru_ascon_mont)]
            Kem::CtruAsconMont,
        ];

        /// Bytes of the shared key/ciphertext arena: the largest need of any served KEM.
        const ARENA_LEN: usize = {
            let mut m = 0;
            let mut i = 0;
            while i < KEMS.len() {
                if KEMS[i].arena_len() > m {
                    m = KEMS[i].arena_len();
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

        /// An RNG replaying the bytes the host sent, in order; running out is an error.
        pub struct Tape {
            bytes: &'static [u8; TAPE_LEN],
            pos: usize,
        }

        impl Tape {
            fn new(bytes: &'static [u8; TAPE_LEN]) -> Tape {
                Tape { bytes, pos: 0 }
            }
        }

        impl RngCore for Tape {
            fn next_u32(&mut self) -> u32 {
                rand_core::impls::next_u32_via_fill(self)
            }
            fn next_u64(&mut self) -> u64 {
                rand_core::impls::next_u64_via_fill(self)
            }
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                let _ = self.try_fill_bytes(dest);
            }
            fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
                let end = self.pos + dest.len();
                match self.bytes.get(self.pos..end) {
                    Some(src) => {
                        dest.copy_from_slice(src);
                        self.pos = end;
                        Ok(())
                    }
                    None => {
                        self.pos = TAPE_LEN;
                        Err(rand_core::Error::from(core::num::NonZeroU32::MIN))
                    }
                }
            }
        }

        impl CryptoRng for Tape {}

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
                    fn k_keygen(rng: &mut Tape, pk: &mut [u8; PK], sk: &mut [u8; SK]) -> bool {
                        $keygen(rng, pk, sk).is_ok()
                    }
                    #[inline(never)]
                    fn k_encaps(pk: &[u8; PK], rng: &mut Tape, ct: &mut [u8; CT], ss: &mut [u8; SS_LEN]) -> bool {
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
                        let mut rng = Tape::new(tape);
                        let ok = measure(kem_op_id(KEM, KemOp::Keygen), || {
                            k_keygen(black_box(&mut rng), black_box(pk), black_box(sk))
                        });
                        io.reply(Status::Ok, KEM.reply_len(KemOp::Keygen));
                        write_prefix(io, ok, rng.pos);
                        io.write_bytes(pk);
                        io.write_bytes(sk);
                    }
                    fn encaps(io: &mut Uart) {
                        // SAFETY: as above.
                        let (pk, ct, (tape, ss)) = unsafe { (region::<0, PK>(), region::<PK, CT>(), tape_and_ss()) };
                        io.read_bytes(pk);
                        io.read_bytes(tape);
                        let mut rng = Tape::new(tape);
                        let ok = measure(kem_op_id(KEM, KemOp::Encaps), || {
                            k_encaps(
                                black_box(pk),
                                black_box(&mut rng),
                                black_box(ct),
                                black_box(ss),
                            )
                        });
                        io.reply(Status::Ok, KEM.reply_len(KemOp::Encaps));
                        write_prefix(io, ok, rng.pos);
                        io.write_bytes(ct);
                        io.write_bytes(ss);
                    }
                    fn decaps(io: &mut Uart) {
                        // SAFETY: as above.
                        let (sk, ct, (_, ss)) = unsafe { (region::<0, SK>(), region::<SK, CT>(), tape_and_ss()) };
                        io.read_bytes(sk);
                        io.read_bytes(ct);
                        measure(kem_op_id(KEM, KemOp::Decaps), || {
                            k_decaps(black_box(sk), black_box(ct), black_box(ss))
                        });
                        io.reply(Status::Ok, KEM.reply_len(KemOp::Decaps));
                        io.write_bytes(ss);
                    }

                    const fn op(o: KemOp, run: fn(&mut Uart)) -> Op<Uart> {
                        Op {
                            id: kem_op_id(KEM, o),
                            request_len: KEM.request_len(o),
                            reply_len: KEM.reply_len(o),
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

        #[cfg(feature = "ml-kem")]
        kem!(
            ml_kem_512,
            Kem::MlKem512,
            kyber512_avr::ml_kem_512::raw::keygen_into,
            kyber512_avr::ml_kem_512::raw::encapsulate_into,
            kyber512_avr::ml_kem_512::raw::decapsulate_into
        );
        #[cfg(feature = "kyber-r3")]
        kem!(
            kyber512_r3,
            Kem::Kyber512R3,
            kyber512_avr::kyber512_r3::raw::keygen_into,
            kyber512_avr::kyber512_r3::raw::encapsulate_into,
            kyber512_avr::kyber512_r3::raw::decapsulate_into
        );
        #[cfg(feature = "saber")]
        kem!(
            lightsaber,
            Kem::LightSaber,
            lightsaber_avr::keygen_into,
            lightsaber_avr::encapsulate_into,
            lightsaber_avr::decapsulate_into
        );

        #[allow(unused_macros)]
        macro_rules! ctru {
            ($m:ident, $kem:expr, $b:ty, $a:ty) => {
                kem!(
                    $m,
                    $kem,
                    ctru_light::CtruLight::<$b, $a>::keygen_into,
                    ctru_light::CtruLight::<$b, $a>::encapsulate_into,
                    ctru_light::CtruLight::<$b, $a>::decapsulate_into
                );
            };
        }
        #[cfg(ctru_sha3_kred)]
        ctru!(ctru_sha3_kred, Kem::CtruSha3Kred, ctru_light::Sha3, ctru_light::Kred2x);
        #[cfg(ctru_sha3_montopt)]
        ctru!(
            ctru_sha3_montopt,
            Kem::CtruSha3MontOpt,
            ctru_light::Sha3,
            ctru_light::MontgomeryOpt
        );
        #[cfg(ctru_sha3_mont)]
        ctru!(
            ctru_sha3_mont,
            Kem::CtruSha3Mont,
            ctru_light::Sha3,
            ctru_light::MontgomeryPlain
        );
        #[cfg(ctru_ascon_kred)]
        ctru!(
            ctru_ascon_kred,
            Kem::CtruAsconKred,
            ctru_light::Ascon,
            ctru_light::Kred2x
        );
        #[cfg(ctru_ascon_montopt)]
        ctru!(
            ctru_ascon_montopt,
            Kem::CtruAsconMontOpt,
            ctru_light::Ascon,
            ctru_light::MontgomeryOpt
        );
        #[cfg(ctru_ascon_mont)]
        ctru!(
            ctru_ascon_mont,
            Kem::CtruAsconMont,
            ctru_light::Ascon,
            ctru_light::MontgomeryPlain
        );

        /// [`firmware::kem::OP_CTRU_DECRYPT_PRODUCT`]: c·f mod 256 exactly,
        /// for the host's differential test (decapsulation alone could not
        /// show a small error: E8 decoding absorbs it).
        #[cfg(any(feature = "ctru-sha3", feature = "ctru-ascon"))]
        pub mod ctru_product {
            use super::*;
            use ctru_light::params::{CT_BYTES, SK_PKE_BYTES};
            use firmware::kem::{CTRU_PRODUCT_REPLY_LEN, CTRU_PRODUCT_REQUEST_LEN, OP_CTRU_DECRYPT_PRODUCT};

            const _: () =
                assert!(CTRU_PRODUCT_REQUEST_LEN == SK_PKE_BYTES + CT_BYTES && CTRU_PRODUCT_REPLY_LEN == CT_BYTES);

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
                *w = ctru_light::kem::hazmat::pke_decrypt_product(sk, ct);
                io.reply(Status::Ok, CT_BYTES as u16);
                io.write_bytes(w);
            }

            /// The op.
            pub const OPS: [Op<Uart>; 1] = [Op {
                id: OP_CTRU_DECRYPT_PRODUCT,
                request_len: CTRU_PRODUCT_REQUEST_LEN as u16,
                reply_len: CTRU_PRODUCT_REPLY_LEN as u16,
                run,
            }];
        }
    }

    #[cfg(mqtt)]
    mod mqtt {
        use core::hint::black_box;
        use core::ptr::addr_of_mut;

        use avr_harness::{measure, Io, Op, Status, Uart};
        use firmware::mqtt::{
            Layout, CF_LEN, MAX_ID_LEN, OP_FINISH, OP_START, PAYLOAD, RECORD_LEN, TAPE_LEN, TOPIC, X25519_LEN,
        };
        use kem_mqtt::{
            AwaitBrokerHello, EphemeralKey, Error, KemId, SensorCredentials, SensorHandshake, Session, Suite,
        };
        use rand_core::{CryptoRng, RngCore};

        #[cfg(feature = "mqtt-ctru-light-ascon")]
        const KEM: KemId = KemId::CtruLightAscon;
        #[cfg(feature = "mqtt-ctru-light-sha3")]
        const KEM: KemId = KemId::CtruLightSha3;
        #[cfg(feature = "mqtt-ml-kem-512")]
        const KEM: KemId = KemId::MlKem512;
        #[cfg(feature = "mqtt-kyber512-r3")]
        const KEM: KemId = KemId::Kyber512R3;
        #[cfg(feature = "mqtt-lightsaber")]
        const KEM: KemId = KemId::LightSaber;

        const L: Layout = Layout {
            pk: KEM.pk_len(),
            sk: KEM.sk_len(),
            ct: KEM.ct_len(),
        };
        const FLIGHT: usize = L.flight_len();

        // The sensor's long-term keys and the broker's public keys: the
        // handshake state borrows them from `start` until `finish`.
        #[cfg(not(feature = "mqtt-provisioned"))]
        static mut CLIENT_ID: [u8; MAX_ID_LEN] = [0; MAX_ID_LEN];
        #[cfg(not(feature = "mqtt-provisioned"))]
        static mut KEM_SK: [u8; L.sk] = [0; L.sk];
        #[cfg(not(feature = "mqtt-provisioned"))]
        static mut X_SK: [u8; X25519_LEN] = [0; X25519_LEN];
        #[cfg(not(feature = "mqtt-provisioned"))]
        static mut BROKER_PK: [u8; L.pk] = [0; L.pk];
        #[cfg(not(feature = "mqtt-provisioned"))]
        static mut BROKER_X_PK: [u8; X25519_LEN] = [0; X25519_LEN];
        /// The same fields, provisioned into the image (in flash on the
        /// ATmega4808: no SRAM); the start request must carry equal bytes.
        #[cfg(feature = "mqtt-provisioned")]
        static PROVISIONED: [u8; L.keys_len()] = *include_bytes!(concat!(env!("OUT_DIR"), "/provisioned-keys.bin"));
        /// The static-static X25519 secret, computed when the keys arrive
        /// (a sensor does it once, at provisioning: spec §3), not in the
        /// measured handshake.
        static mut X_STATIC: [u8; X25519_LEN] = [0; X25519_LEN];
        /// The start's random tape; in `finish`, where the tape is dead, the
        /// ClientFinished and the record (off the stack at its peak).
        static mut TAPE: [u8; TAPE_LEN] = [0; TAPE_LEN];
        const _: () = assert!(CF_LEN + RECORD_LEN <= TAPE_LEN);
        /// ClientHello out, then BrokerHello in.
        static mut FLIGHT_BUF: [u8; FLIGHT] = [0; FLIGHT];
        /// The ephemeral KEM secret key between the two steps (a static, so
        /// the state below stays small and moves cheaply).
        static mut EPHEMERAL: EphemeralKey = EphemeralKey::new();
        /// The sensor between its two steps.
        static mut STATE: Option<Sensor> = None;

        type Sensor = AwaitBrokerHello<'static, &'static mut EphemeralKey>;

        /// An RNG replaying the host's bytes in order; running out is an error.
        struct Tape {
            bytes: &'static [u8],
            pos: usize,
        }

        impl RngCore for Tape {
            fn next_u32(&mut self) -> u32 {
                rand_core::impls::next_u32_via_fill(self)
            }
            fn next_u64(&mut self) -> u64 {
                rand_core::impls::next_u64_via_fill(self)
            }
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                let _ = self.try_fill_bytes(dest);
            }
            fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
                let end = self.pos + dest.len();
                match self.bytes.get(self.pos..end) {
                    Some(src) => {
                        dest.copy_from_slice(src);
                        self.pos = end;
                        Ok(())
                    }
                    None => {
                        self.pos = self.bytes.len();
                        Err(rand_core::Error::from(core::num::NonZeroU32::MIN))
                    }
                }
            }
        }

        impl CryptoRng for Tape {}

        /// The status code of an error (`firmware::mqtt::error_name`).
        fn code(e: Error) -> u8 {
            match e {
                Error::Rng => 2,
                Error::InvalidKey | Error::InvalidEphemeralKey | Error::X25519NonContributory => 3,
                Error::SuiteNotSupported(_) | Error::UnknownSuite(_) => 4,
                Error::BrokerFinishedInvalid => 5,
                Error::Truncated { .. }
                | Error::Oversized { .. }
                | Error::UnexpectedMessage { .. }
                | Error::UnsupportedVersion(_)
                | Error::SuiteMismatch { .. }
                | Error::InvalidClientId => 6,
                _ => 1,
            }
        }

        #[inline(never)]
        fn k_start(
            suite: Suite,
            creds: SensorCredentials<'static>,
            rng: &mut Tape,
            out: &mut [u8; FLIGHT],
            ephemeral: &'static mut EphemeralKey,
            slot: &mut Option<Sensor>,
        ) -> Result<usize, Error> {
            let (state, n) = SensorHandshake::start_in(suite, creds, rng, out, ephemeral)?;
            *slot = Some(state);
            Ok(n)
        }

        #[inline(never)]
        fn k_finish(slot: &mut Option<Sensor>, msg: &[u8], cf: &mut [u8; CF_LEN]) -> Result<Session, Error> {
            // In place: the state (with its transcript sponge) is not moved
            // onto the stack under the decapsulations.
            AwaitBrokerHello::receive_broker_hello_in(slot, msg, cf).map(|(s, _)| s)
        }

        /// The cached static-static secret for a hybrid suite (`None`: the
        /// handshake computes it, or reports the bad key itself).
        fn cache_static_secret(
            suite_id: u8,
            x_sk: &[u8; X25519_LEN],
            x_pk: &[u8; X25519_LEN],
            out: &'static mut [u8; X25519_LEN],
        ) -> Option<&'static [u8; X25519_LEN]> {
            #[cfg(feature = "mqtt-x25519")]
            if Suite::from_id(suite_id).is_ok_and(|s| s.is_hybrid()) {
                if let Ok(secret) = kem_mqtt::static_x25519_secret(x_sk, x_pk) {
                    *out = secret;
                    return Some(out);
                }
            }
            let _ = (suite_id, x_sk, x_pk, out);
            None
        }

        /// The key fields of a start request.
        struct Keys {
            id: &'static [u8],
            sk: &'static [u8; L.sk],
            x_sk: &'static [u8; X25519_LEN],
            pk: &'static [u8; L.pk],
            x_pk: &'static [u8; X25519_LEN],
        }

        /// Reads the key fields of the request into the key statics.
        #[cfg(not(feature = "mqtt-provisioned"))]
        fn read_keys(io: &mut Uart) -> Option<Keys> {
            // SAFETY: distinct statics; the handshake state that borrowed
            // them was dropped by the caller.
            let (id, sk, x_sk, pk, x_pk) = unsafe {
                (
                    &mut *addr_of_mut!(CLIENT_ID),
                    &mut *addr_of_mut!(KEM_SK),
                    &mut *addr_of_mut!(X_SK),
                    &mut *addr_of_mut!(BROKER_PK),
                    &mut *addr_of_mut!(BROKER_X_PK),
                )
            };
            let id_len = (io.read_byte() as usize).min(MAX_ID_LEN);
            io.read_bytes(id);
            io.read_bytes(sk);
            io.read_bytes(x_sk);
            io.read_bytes(pk);
            io.read_bytes(x_pk);
            let id: &'static [u8; MAX_ID_LEN] = id;
            Some(Keys {
                id: &id[..id_len],
                sk,
                x_sk,
                pk,
                x_pk,
            })
        }

        /// Reads the key fields of the request and checks them against the
        /// provisioned ones (`None` if they differ: the host and the image
        /// disagree on the keys).
        #[cfg(feature = "mqtt-provisioned")]
        fn read_keys(io: &mut Uart) -> Option<Keys> {
            let mut differ = 0u8;
            for &b in PROVISIONED.iter() {
                differ |= io.read_byte() ^ b;
            }
            let (&id_len, rest) = PROVISIONED.split_first()?;
            let (id, rest) = rest.split_first_chunk::<MAX_ID_LEN>()?;
            let (sk, rest) = rest.split_first_chunk::<{ L.sk }>()?;
            let (x_sk, rest) = rest.split_first_chunk::<X25519_LEN>()?;
            let (pk, rest) = rest.split_first_chunk::<{ L.pk }>()?;
            let (x_pk, _) = rest.split_first_chunk::<X25519_LEN>()?;
            (differ == 0).then_some(Keys {
                id: &id[..(id_len as usize).min(MAX_ID_LEN)],
                sk,
                x_sk,
                pk,
                x_pk,
            })
        }

        fn start(io: &mut Uart) {
            // SAFETY: single-threaded; the previous handshake state, which
            // borrows the key statics, is dropped before they are rewritten.
            let slot = unsafe { &mut *addr_of_mut!(STATE) };
            *slot = None;
            // SAFETY: the state that borrowed it is gone (above).
            let ephemeral = unsafe { &mut *addr_of_mut!(EPHEMERAL) };
            // SAFETY: distinct statics, nothing else borrows them now.
            let (tape, flight) = unsafe { (&mut *addr_of_mut!(TAPE), &mut *addr_of_mut!(FLIGHT_BUF)) };
            let suite_id = io.read_byte();
            let keys = read_keys(io);
            io.read_bytes(tape);
            let tape: &'static [u8; TAPE_LEN] = tape;
            let Some(Keys { id, sk, x_sk, pk, x_pk }) = keys else {
                io.reply(Status::Ok, L.start_reply_len() as u16);
                io.write_byte(8);
                io.write_u16(0);
                io.write_u16(0);
                io.write_bytes(&flight[..L.max_client_hello()]);
                return;
            };
            // SAFETY: single-threaded; nothing else borrows it now.
            let x_static = unsafe { &mut *addr_of_mut!(X_STATIC) };
            let cached = cache_static_secret(suite_id, x_sk, x_pk, x_static);
            let creds = SensorCredentials {
                client_id: id,
                kem_sk: sk,
                x25519_sk: Some(&*x_sk),
                broker_kem_pk: pk,
                broker_x25519_pk: Some(&*x_pk),
                x25519_static_secret: cached,
            };
            let mut rng = Tape { bytes: tape, pos: 0 };
            let r = match Suite::from_id(suite_id) {
                Ok(suite) => measure(OP_START, || {
                    k_start(
                        black_box(suite),
                        black_box(creds),
                        black_box(&mut rng),
                        black_box(&mut *flight),
                        ephemeral,
                        black_box(&mut *slot),
                    )
                }),
                Err(e) => Err(e),
            };
            let (status, n) = match r {
                Ok(n) => (0, n),
                Err(e) => (code(e), 0),
            };
            io.reply(Status::Ok, L.start_reply_len() as u16);
            io.write_byte(status);
            io.write_u16(rng.pos as u16);
            io.write_u16(n as u16);
            io.write_bytes(&flight[..L.max_client_hello()]);
        }

        /// The new session key at work: one record to the broker. Not
        /// inlined, so the record layer's working state is not part of the
        /// frame that holds the handshake's (the sensor's peak, under decaps).
        #[inline(never)]
        fn seal_record(session: &mut Session, record: &mut [u8; RECORD_LEN]) -> u8 {
            match session.seal(TOPIC, PAYLOAD, record) {
                Ok(_) => 0,
                Err(e) => code(e),
            }
        }

        fn finish(io: &mut Uart) {
            // SAFETY: single-threaded; one borrow of each static.
            let (slot, flight, scratch) = unsafe {
                (
                    &mut *addr_of_mut!(STATE),
                    &mut *addr_of_mut!(FLIGHT_BUF),
                    &mut *addr_of_mut!(TAPE),
                )
            };
            let len = (io.read_u16() as usize).min(L.max_broker_hello());
            io.read_bytes(&mut flight[..L.max_broker_hello()]);
            let msg = &flight[..len];
            scratch.fill(0);
            let Some((cf, rest)) = scratch.split_first_chunk_mut::<CF_LEN>() else {
                return;
            };
            let Some(record) = rest.first_chunk_mut::<RECORD_LEN>() else {
                return;
            };
            let status = if slot.is_none() {
                7
            } else {
                match measure(OP_FINISH, || {
                    k_finish(black_box(&mut *slot), black_box(msg), black_box(&mut *cf))
                }) {
                    Ok(mut session) => seal_record(&mut session, record),
                    Err(e) => code(e),
                }
            };
            io.reply(Status::Ok, L.finish_reply_len() as u16);
            io.write_byte(status);
            io.write_bytes(&cf[..]);
            io.write_bytes(&record[..]);
        }

        /// The sensor's two steps.
        pub const OPS: [Op<Uart>; 2] = [
            Op {
                id: OP_START,
                request_len: L.start_request_len() as u16,
                reply_len: L.start_reply_len() as u16,
                run: start,
            },
            Op {
                id: OP_FINISH,
                request_len: L.finish_request_len() as u16,
                reply_len: L.finish_reply_len() as u16,
                run: finish,
            },
        ];
    }

    /// Every op group this image serves.
    const GROUPS: &[&[Op<Uart>]] = &[
        #[cfg(feature = "rings")]
        &rings::ctru769::OPS,
        #[cfg(feature = "rings")]
        &rings::ctru3329::OPS,
        #[cfg(feature = "rings")]
        &rings::kyber::OPS,
        #[cfg(feature = "rings")]
        &rings::saber3329::OPS,
        #[cfg(feature = "rings")]
        &rings::saber7681::OPS,
        #[cfg(feature = "ml-kem")]
        &kems::ml_kem_512::OPS,
        #[cfg(feature = "kyber-r3")]
        &kems::kyber512_r3::OPS,
        #[cfg(feature = "saber")]
        &kems::lightsaber::OPS,
        #[cfg(ctru_sha3_kred)]
        &kems::ctru_sha3_kred::OPS,
        #[cfg(ctru_sha3_montopt)]
        &kems::ctru_sha3_montopt::OPS,
        #[cfg(ctru_sha3_mont)]
        &kems::ctru_sha3_mont::OPS,
        #[cfg(ctru_ascon_kred)]
        &kems::ctru_ascon_kred::OPS,
        #[cfg(ctru_ascon_montopt)]
        &kems::ctru_ascon_montopt::OPS,
        #[cfg(ctru_ascon_mont)]
        &kems::ctru_ascon_mont::OPS,
        #[cfg(all(kem, any(feature = "ctru-sha3", feature = "ctru-ascon")))]
        &kems::ctru_product::OPS,
        #[cfg(mqtt)]
        &mqtt::OPS,
    ];

    const N_OPS: usize = {
        let mut n = 0;
        let mut g = 0;
        while g < GROUPS.len() {
            n += GROUPS[g].len();
            g += 1;
        }
        n
    };

    const fn all_ops() -> [Op<Uart>; N_OPS] {
        let mut out = [Op {
            id: 0,
            request_len: 0,
            reply_len: 0,
            run: |_| {},
        }; N_OPS];
        let (mut g, mut i) = (0, 0);
        while g < GROUPS.len() {
            let mut k = 0;
            while k < GROUPS[g].len() {
                out[i] = GROUPS[g][k];
                i += 1;
                k += 1;
            }
            g += 1;
        }
        out
    }

    static OPS: [Op<Uart>; N_OPS] = all_ops();

    #[no_mangle]
    extern "C" fn main() -> ! {
        let mut uart = Uart::init();
        avr_harness::serve(&mut uart, &OPS)
    }

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        // Tell the host through the marker register, then stop.
        avr_harness::marker_begin(0x7F);
        avr_harness::exit()
    }
}
