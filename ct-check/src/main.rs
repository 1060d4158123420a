//! ctgrind-style secret-independence check.
//!
//! Every byte the KEMs (and the X25519 scalars) draw from the RNG is marked *undefined* for valgrind
//! memcheck (`VALGRIND_MAKE_MEM_UNDEFINED`), and so are the secret parts of
//! each secret key before decapsulation. Memcheck then reports every
//! conditional branch ("Conditional jump or move depends on uninitialised
//! value(s)") and every memory index ("Use of uninitialised value of size
//! 8") computed from secret data. Values the specification makes public
//! are declassified (`VALGRIND_MAKE_MEM_DEFINED`) exactly where it makes
//! them public, each with a comment saying why.
//!
//! The `mqtt` phase does the same for the KEM-MQTT/1 core (`kem-mqtt`):
//! both sides of hybrid handshakes of both symmetric families with every
//! long-term secret and every RNG output secret, the key schedule (KDF) on
//! secret inputs, BrokerFinished and ClientFinished checks that pass and
//! that fail, records opened with valid and with invalid tags, and the
//! all-zero X25519 checks (computed and cached static-static secrets).
//! Flights and records are declassified when they are sent.
//!
//! Run it with `ci/ct-valgrind.sh`. Outside valgrind the client requests
//! are no-ops and the binary is an ordinary functional test.

use std::process::ExitCode;

use kem_common::BufferKem;
use kem_registry::{with_kem, Kem};

mod vg {
    //! Valgrind client requests (`valgrind.h`, `memcheck.h`) for x86-64 Linux.

    const MAKE_MEM_UNDEFINED: usize = 0x4D43_0001; // VG_USERREQ_TOOL_BASE('M','C') + 1
    const MAKE_MEM_DEFINED: usize = 0x4D43_0002; // VG_USERREQ_TOOL_BASE('M','C') + 2
    const RUNNING_ON_VALGRIND: usize = 0x1001;
    const COUNT_ERRORS: usize = 0x1201;

    /// `VALGRIND_DO_CLIENT_REQUEST_EXPR`: the magic rotate sequence (a no-op
    /// on a real CPU: 3 + 13 + 61 + 51 = 128 bits) followed by
    /// `xchg rbx, rbx`, with `rax` pointing at the arguments; the result is
    /// returned in `rdx`, which holds `default` when not under valgrind.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn request(default: usize, req: usize, a1: usize, a2: usize) -> usize {
        let args: [usize; 6] = [req, a1, a2, 0, 0, 0];
        let mut result = default;
        // SAFETY: the instruction sequence changes no register or memory on
        // a CPU; under valgrind it performs the request on `args`.
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") args.as_ptr(),
                options(nostack),
            );
        }
        core::hint::black_box(&args);
        result
    }

    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    fn request(default: usize, _req: usize, _a1: usize, _a2: usize) -> usize {
        default
    }

    /// Marks `bytes` secret: memcheck reports branches and indices on them.
    pub fn secret(bytes: &[u8]) {
        request(0, MAKE_MEM_UNDEFINED, bytes.as_ptr() as usize, bytes.len());
    }

    /// Declassifies `bytes`: the protocol makes them public here.
    pub fn public(bytes: &[u8]) {
        public_at(bytes.as_ptr() as usize, bytes.len());
    }

    /// [`public`] for memory known by its address only (borrowed mutably
    /// elsewhere: the request reads nothing, it only names the range).
    pub fn public_at(addr: usize, len: usize) {
        request(0, MAKE_MEM_DEFINED, addr, len);
    }

    /// [`secret`] likewise.
    pub fn secret_at(addr: usize, len: usize) {
        request(0, MAKE_MEM_UNDEFINED, addr, len);
    }

    /// Whether the process runs under valgrind.
    pub fn running() -> bool {
        request(0, RUNNING_ON_VALGRIND, 0, 0) != 0
    }

    /// Errors memcheck has reported so far.
    pub fn errors() -> usize {
        request(0, COUNT_ERRORS, 0, 0)
    }
}

/// A deterministic RNG (seeded ChaCha20) whose every output byte is secret
/// (unless `mark` is off: for phases that only prepare inputs).
struct SecretRng(rand_chacha::ChaCha20Rng, bool);

impl rand_core::TryRng for SecretRng {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Self::Error> {
        rand_core::Rng::fill_bytes(&mut self.0, dest);
        if self.1 {
            vg::secret(dest);
        }
        Ok(())
    }
}
impl rand_core::TryCryptoRng for SecretRng {}

/// Which operations to check (each separately, so a report names its phase).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Keygen,
    Encaps,
    Decaps,
    Import,
    /// The KEM-MQTT/1 core.
    Mqtt,
}

/// Runs `iterations` key pairs of `K`, the buffer API of `kem`; returns
/// the inputs checked.
fn check<K: BufferKem>(kem: Kem, iterations: u64, phases: &[Phase]) -> usize {
    let label = kem.name();
    let mut checked = 0;
    for i in 0..iterations {
        let seed = 0xC7C7_0000 + i;
        let (mut pk, mut sk, mut ct) = (K::EK_ZERO, K::DK_ZERO, K::CT_ZERO);
        let mut rng = SecretRng(kem_common::test_rng(seed), phases.contains(&Phase::Keygen));
        K::keygen_into(&mut rng, &mut pk, &mut sk).expect("keygen");
        // Declassify: the public key is published (FIPS 203 §7.1 output ek; Saber/CTRU pk).
        vg::public(pk.as_ref());
        // The secret key's embedded public parts (pk, H(pk)) are public; its
        // secret parts are marked secret whatever keygen left them as.
        vg::public(sk.as_ref());
        for r in kem.scheme().sk_secret_ranges() {
            vg::secret(&sk.as_ref()[r]);
        }
        let mut rng = SecretRng(kem_common::test_rng(!seed), phases.contains(&Phase::Encaps));
        let ss_enc = *K::encapsulate_into(&pk, &mut rng, &mut ct).expect("encaps").as_bytes();
        // Declassify: the ciphertext is sent on the wire.
        vg::public(ct.as_ref());
        if phases.contains(&Phase::Decaps) {
            let ss_dec = *K::decapsulate_into(&sk, &ct).as_bytes();
            // A ciphertext that fails re-encryption takes the implicit-rejection path.
            let mut bad = ct;
            let at = (i as usize * 97) % bad.as_ref().len();
            bad.as_mut()[at] ^= 1 << (i % 8);
            let ss_rej = *K::decapsulate_into(&sk, &bad).as_bytes();
            // Declassify (test oracle only, not a protocol step): compare the results.
            vg::public(&ss_enc);
            vg::public(&ss_dec);
            vg::public(&ss_rej);
            assert_eq!(ss_enc, ss_dec, "{label}: decapsulation disagrees");
            assert_ne!(ss_dec, ss_rej, "{label}: rejection key equals the real key");
            checked += 2;
        }
        if phases.contains(&Phase::Import) {
            let ok = K::check_decapsulation_key(sk.as_ref()).is_ok();
            // Declassify: whether an honest key imports is public (it always does).
            vg::public(&[ok as u8]);
            assert!(ok, "{label}: honest secret key refused");
            checked += 1;
        }
        checked += phases.contains(&Phase::Keygen) as usize + phases.contains(&Phase::Encaps) as usize;
    }
    checked
}

/// X25519 with a secret scalar: the fixed-base multiplication
/// (`x25519_base`: signed digits, table selection, Edwards formulas), the
/// table-free base ladder and the variable-base ladder. Returns the
/// operations checked.
fn check_x25519(iterations: u64) -> usize {
    let mut checked = 0;
    for i in 0..iterations {
        let mut k = [0u8; 32];
        rand_core::Rng::fill_bytes(&mut SecretRng(kem_common::test_rng(0x2551_9000 + i), true), &mut k);
        let pk = x25519_avr::x25519_base(&k);
        let pk_ladder = x25519_avr::x25519_base_ladder(&k);
        // Declassify: a public key is published.
        vg::public(&pk);
        vg::public(&pk_ladder);
        assert_eq!(pk, pk_ladder, "X25519: fixed-base and ladder disagree");
        let peer: [u8; 32] = core::array::from_fn(|j| (j as u8).wrapping_mul(29).wrapping_add(i as u8));
        let shared = x25519_avr::x25519(&k, &peer);
        // Declassify (test oracle only): the result was computed.
        vg::public(&shared);
        checked += 3;
    }
    checked
}

/// Declassifies whether `r` is `Ok`: the outcome of a check is public (the
/// handshake goes on or stops, the record is delivered or dropped).
fn outcome<T, E>(r: &Result<T, E>) -> bool {
    let ok = [r.is_ok() as u8];
    vg::public(&ok);
    ok[0] == 1
}

/// The KEM-MQTT/1 core, `iterations` times per suite: per iteration two
/// hybrid handshakes (one whose BrokerFinished is modified in transit),
/// a modified and an honest ClientFinished, three records each way plus a
/// modified one, the KDF of both families on secret input, and the
/// static-static X25519 secret computed and then cached. Returns the
/// operations checked.
fn check_mqtt(iterations: u64) -> Vec<(String, usize)> {
    use kem_mqtt::sym::{kdf, kdf32};
    use kem_mqtt::testing::{broker_fixture, sensor_fixture};
    use kem_mqtt::EphemeralKey;
    use kem_mqtt::{
        BrokerHandshake, Error, Family, SensorHandshake, Suite, SuiteSet, MAX_BROKER_HELLO_LEN, MAX_CLIENT_HELLO_LEN,
        RECORD_OVERHEAD,
    };
    // Every hybrid suite: both symmetric families, every KEM's key schedule.
    let suites = Suite::ALL.into_iter().filter(|s| s.is_hybrid());
    let mut results = vec![];
    for suite in suites {
        let name = suite.name();
        let kem = suite.kem();
        let mut checked = 0;
        for i in 0..iterations {
            let seed = 0x4D51_0000 + i;
            // Long-term keys, made with an unmarked RNG, then their secret
            // parts marked: the KEM secret polynomial and z, both X25519 keys.
            let mut setup = SecretRng(kem_common::test_rng(seed), false);
            let sensor = sensor_fixture(suite, &mut setup);
            let broker = broker_fixture(suite, &mut setup).with_client(&sensor, SuiteSet::EMPTY.with(suite));
            for r in kem.sk_secret_ranges() {
                vg::secret(&sensor.sk[r.clone()]);
                vg::secret(&broker.sk[r]);
            }
            vg::secret(&sensor.x_sk);
            vg::secret(&broker.x_sk);

            // The KDF of both families on a secret input (length-framed parts).
            let mut ikm = [0u8; 32];
            rand_core::Rng::fill_bytes(&mut SecretRng(kem_common::test_rng(!seed), true), &mut ikm);
            for family in [Family::Sha3, Family::Ascon] {
                let prk = kdf32(family, b"ct-check", &[&ikm, b"public context"]);
                let mut okm = [0u8; 48];
                kdf(family, b"ct-check out", &[&prk.0], &mut okm);
                checked += 2;
            }

            let mut rng = SecretRng(kem_common::test_rng(seed ^ 0x5EED), true);
            let (mut ch, mut bh, mut cf) = ([0u8; MAX_CLIENT_HELLO_LEN], [0u8; MAX_BROKER_HELLO_LEN], [0u8; 64]);
            for tamper_bh in [true, false] {
                let creds = sensor.credentials(&broker);
                let mut eph = EphemeralKey::new();
                let eph_at = &mut eph as *mut EphemeralKey as usize;
                let (st, n) = SensorHandshake::start_in(suite, creds, &mut rng, &mut ch, &mut eph).expect("start");
                // Declassify: flight 1 is sent; it holds pk_e, so the copy of
                // pk_e (and H(pk_e)) inside the ephemeral secret key is public
                // too — only its secret ranges stay secret, as for static keys.
                // (`EphemeralKey` is `repr(transparent)` over the key bytes.)
                vg::public(&ch[..n]);
                vg::public_at(eph_at, kem.compact_sk_len());
                for r in kem.compact_sk_secret_ranges() {
                    vg::secret_at(eph_at + r.start, r.len());
                }
                let (await_cf, m) = BrokerHandshake::accept(&broker, &ch[..n], &mut rng, &mut bh).expect("accept");
                // Declassify: flight 2 is sent.
                vg::public(&bh[..m]);
                checked += 2;
                if tamper_bh {
                    // A BrokerFinished modified in transit: refused.
                    bh[m - 1 - (i as usize % 32)] ^= 1 << (i % 8);
                    let r = st.receive_broker_hello(&bh[..m], &mut cf);
                    assert!(!outcome(&r), "{name}: a modified BrokerFinished verified");
                    assert!(matches!(r, Err(Error::BrokerFinishedInvalid)));
                    checked += 1;
                    continue;
                }
                let r = st.receive_broker_hello(&bh[..m], &mut cf);
                assert!(outcome(&r), "{name}: the honest BrokerFinished was refused");
                let (mut s_session, k) = r.expect("checked");
                // Declassify: flight 3 is sent.
                vg::public(&cf[..k]);
                // A ClientFinished modified in transit, then the honest one.
                let mut bad = cf;
                bad[2 + (i as usize * 7) % 32] ^= 0x20;
                let r = await_cf.check_client_finished(&bad[..k]);
                assert!(!outcome(&r), "{name}: a modified ClientFinished verified");
                let r = await_cf.check_client_finished(&cf[..k]);
                assert!(outcome(&r), "{name}: the honest ClientFinished was refused");
                let mut b_session = r.expect("checked");
                checked += 3;

                // Records with secret plaintexts, sensor to broker and back.
                let topic = avr_wire::mqtt::TOPIC; // the sensor's own record topic
                for j in 0..3u8 {
                    let mut pt = [j; 24];
                    vg::secret(&pt);
                    let mut rec = [0u8; 24 + RECORD_OVERHEAD];
                    let len = s_session.seal(topic, &pt, &mut rec).expect("seal");
                    // Declassify: the record is published.
                    vg::public(&rec[..len]);
                    let r = b_session.open(topic, &rec[..len], &mut pt);
                    assert!(outcome(&r), "{name}: an honest record was refused");
                    // A record modified in transit (a fresh sequence number
                    // with a wrong tag: the AEAD check runs and fails).
                    let len = b_session.seal(topic, &pt, &mut rec).expect("seal");
                    vg::public(&rec[..len]);
                    rec[len - 1 - j as usize] ^= 1;
                    let r = s_session.open(topic, &rec[..len], &mut pt);
                    assert!(!outcome(&r), "{name}: a modified record opened");
                    checked += 4;
                }
            }

            // The static-static X25519 secret, computed (its all-zero check)
            // and then cached (the check of a cached value).
            let cached = kem_mqtt::static_x25519_secret(&sensor.x_sk, &broker.x_pk);
            // The all-zero check's outcome may be a conditional move into the
            // result's discriminant: declassify the whole result (the check
            // is public: the key is refused or not), then mark the secret
            // secret again.
            let at = &cached as *const _ as usize;
            vg::public_at(at, std::mem::size_of_val(&cached));
            assert!(outcome(&cached), "{name}: static-static X25519 refused");
            let cached = cached.expect("checked");
            vg::secret(&cached);
            let mut creds = sensor.credentials(&broker);
            creds.x25519_static_secret = Some(&cached);
            let r = SensorHandshake::start(suite, creds, &mut rng, &mut ch);
            assert!(outcome(&r), "{name}: the cached static secret was refused");
            checked += 2;
        }
        results.push((format!("KEM-MQTT/1 {name}"), checked));
    }
    results
}

/// Negative control: a deliberate branch on a secret byte. Memcheck must
/// report it, otherwise the client requests are not reaching valgrind and a
/// clean run of the real check would mean nothing.
fn selftest() -> ExitCode {
    let mut b = [0u8; 1];
    rand_core::Rng::fill_bytes(&mut SecretRng(kem_common::test_rng(1), true), &mut b);
    if std::hint::black_box(b[0]) & 1 == 1 {
        println!("selftest: odd");
    } else {
        println!("selftest: even");
    }
    let detected = vg::errors() > 0;
    println!(
        "selftest: under valgrind: {}, secret branch detected: {detected}",
        vg::running()
    );
    if detected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every KEM variant of the registry (and X25519 with key generation) through `phases`.
fn kem_results(iterations: u64, phases: &[Phase]) -> Vec<(String, usize)> {
    let mut results: Vec<(String, usize)> = Kem::ALL
        .into_iter()
        .map(|kem| (kem.name().to_string(), with_kem!(kem, K => check::<K>(kem, iterations, phases))))
        .collect();
    if phases.contains(&Phase::Keygen) {
        results.push(("X25519".to_string(), check_x25519(iterations)));
    }
    results
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("selftest") {
        return selftest();
    }
    let iterations: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4);
    // Phases: `all` (default) or a comma list of keygen,encaps,decaps,import,mqtt.
    let phases: Vec<Phase> = match args.get(2).map(String::as_str) {
        None | Some("all") => vec![Phase::Keygen, Phase::Encaps, Phase::Decaps, Phase::Import, Phase::Mqtt],
        Some(list) => list
            .split(',')
            .map(|p| match p {
                "keygen" => Phase::Keygen,
                "encaps" => Phase::Encaps,
                "decaps" => Phase::Decaps,
                "import" => Phase::Import,
                "mqtt" => Phase::Mqtt,
                other => panic!("unknown phase {other}"),
            })
            .collect(),
    };
    let mqtt = phases.contains(&Phase::Mqtt);
    let kem_phases: Vec<Phase> = phases.iter().copied().filter(|p| *p != Phase::Mqtt).collect();
    let phases = &kem_phases;
    let mut results = vec![];
    if !phases.is_empty() {
        results = kem_results(iterations, phases);
    }
    if mqtt {
        results.extend(check_mqtt(iterations));
    }
    let total: usize = results.iter().map(|r| r.1).sum();
    for (name, n) in &results {
        println!("{name}: {n} operations on secret inputs");
    }
    let errors = vg::errors();
    println!(
        "ct-check: {total} operations, under valgrind: {}, memcheck errors: {errors}",
        vg::running()
    );
    if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
