//! Key files and the registry (JSON with hex keys): parse and validate
//! arbitrary text, and honest files with fuzz-chosen edits. Whatever
//! validates must save and load back to the same file.
#![no_main]
use std::sync::OnceLock;

use kem_fuzz::{mutate, FuzzRng};
use kem_mqtt::{Suite, SuiteSet};
use kem_mqtt_host::keys::{BrokerKeyFile, BrokerSecrets, Registry, RegistryFile, SensorKeyFile, SensorKeys};
use kem_mqtt_host::provision::{generate_broker, provision_sensor};

/// Honest broker key file, registry and one sensor key file per KEM.
fn honest() -> &'static Vec<String> {
    static FILES: OnceLock<Vec<String>> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut rng = FuzzRng::new(11);
        let broker = generate_broker(&kem_mqtt::KEMS, &mut rng);
        let mut registry = Registry::default();
        let mut files = vec![serde_json::to_string(&broker.to_file()).unwrap()];
        for (i, kem) in kem_mqtt::KEMS.into_iter().enumerate() {
            let suite = Suite::new(kem, i % 2 == 0);
            let keys = provision_sensor(
                &broker,
                &mut registry,
                &format!("s{i}"),
                suite,
                SuiteSet::for_kem(kem, false),
                &mut rng,
            )
            .unwrap();
            files.push(serde_json::to_string(&keys.to_file()).unwrap());
        }
        files.push(serde_json::to_string(&registry.to_file()).unwrap());
        files
    })
}

fn check(text: &[u8]) {
    if let Ok(f) = serde_json::from_slice::<SensorKeyFile>(text) {
        if let Ok(k) = SensorKeys::from_file(&f) {
            let again = SensorKeys::from_file(&k.to_file()).expect("a saved sensor key file loads");
            assert_eq!(again.kem_pk, k.kem_pk);
            assert_eq!(again.client_id, k.client_id);
        }
    }
    if let Ok(f) = serde_json::from_slice::<BrokerKeyFile>(text) {
        if let Ok(b) = BrokerSecrets::from_file(&f) {
            let again = BrokerSecrets::from_file(&b.to_file()).expect("a saved broker key file loads");
            assert_eq!(again.x25519_pk, b.x25519_pk);
        }
    }
    if let Ok(f) = serde_json::from_slice::<RegistryFile>(text) {
        if let Ok(r) = Registry::from_file(&f) {
            let again = Registry::from_file(&r.to_file()).expect("a saved registry loads");
            assert_eq!(again.to_file().clients, r.to_file().clients);
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    if sel & 0x80 == 0 {
        check(rest);
    } else {
        let files = honest();
        let f = &files[sel as usize % files.len()];
        check(&mutate(f.as_bytes(), rest));
    }
});
