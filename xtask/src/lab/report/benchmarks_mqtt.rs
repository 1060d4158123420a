//! The KEM-MQTT sections of `docs/benchmarks.md`: the sensor's handshake
//! per suite, the sensor application's steps with the energy estimate
//! built on them, and the broker under load (with the run before the
//! maintained MQTT client beside it).

use std::fmt::Write as _;

use crate::report::energy;
use crate::report::records::{self, Record, APP_SCHEME, MQTT_SCHEME};
use crate::report::table::{grouped, ratio};
use crate::target;

/// The KEM-MQTT/1 table: the sensor's handshake work per suite beside the published KEM-MQTT figure.
pub(super) fn mqtt_summary(records: &[Record]) -> String {
    let rows: Vec<&Record> = records
        .iter()
        .filter(|r| r.scheme == MQTT_SCHEME && r.operation == "handshake")
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "## KEM-MQTT/1 sensor handshake\n\n\
         The firmware (`mqtt-<kem>[-x25519]` images, opt-level 2: at 3 the LightSaber hybrid image\n\
         exceeds 128 KB) runs the sensor: `start` = `SensorHandshake::start` (KEM keygen + encaps, hybrid:\n\
         X25519 key generation; the static-static X25519 secret is computed when the keys are\n\
         loaded, as spec §3 allows, outside the measurement), `finish` = `receive_broker_hello`\n\
         (two decaps, hybrid: one X25519, `crates/x25519-avr`); the host plays the broker (`BrokerHandshake`) and\n\
         checks the ClientHello byte for byte, the ClientFinished and a record sealed under the\n\
         new key. Flights: ClientHello / BrokerHello / ClientFinished / first record (8-byte\n\
         client id). Published: KEM-MQTT (ePrint 2025/563), Kyber-512 sensor handshake work on an\n\
         ATmega4808, 31.8 M cycles.\n\n\
         On the ATmega4808 the cycles are classic-core counts (like the published figure); AVRxt M is the\n\
         same handshake on the 4808's own core, priced from an instruction trace (`xtask/src/lab/run/avrxt.rs`).\n\n\
         | MCU | suite | start M | finish M | total M | AVRxt M | stack B start/finish | code B | flights B | published M | ours/published |\n\
         |---|---|---:|---:|---:|---:|---|---:|---|---:|---:|\n",
    );
    let find = |r: &Record, op: &str| {
        records
            .iter()
            .find(|x| x.mcu == r.mcu && x.scheme == r.scheme && x.variant == r.variant && x.operation == op)
    };
    let m = |c: u64| format!("{:.2}", c as f64 / 1e6);
    for r in rows {
        let (Some(a), Some(b)) = (find(r, "start"), find(r, "finish")) else {
            continue;
        };
        let f = r.flight_bytes.unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {}/{} | {} | {}/{}/{}/{} | {} | {} |",
            r.mcu,
            r.variant,
            m(a.cycles),
            m(b.cycles),
            m(r.cycles),
            r.cycles_avrxt.map_or("–".into(), m),
            a.stack_bytes,
            b.stack_bytes,
            r.code_bytes,
            f[0],
            f[1],
            f[2],
            f[3],
            r.published_cycles.map(m).unwrap_or_default(),
            ratio(r.cycles, r.published_cycles)
        );
    }
    s.push('\n');
    s
}

/// The sensor application's section: what its steps cost (measured), and
/// what that means for a battery (an estimate, [`energy`]).
pub(super) fn app_summary(records: &[Record]) -> String {
    let app = |mcu: &str, suite: &str, op: &str| {
        records
            .iter()
            .find(|r| r.scheme == APP_SCHEME && r.mcu == mcu && r.variant == suite && r.operation == op)
    };
    let handshakes: Vec<&Record> = records
        .iter()
        .filter(|r| r.scheme == APP_SCHEME && r.operation == "handshake")
        .collect();
    if handshakes.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "## The sensor application: what a reading costs\n\n\
         `cargo xtask bench --filter kem-mqtt-app` runs each suite's application image (`app-<kem>[-x25519]`,\n\
         provisioned keys, `crates/avr-wire/src/app.rs`) in simavr against the host playing its bridge and\n\
         broker (`xtask/src/lab/mqtt/app_cost.rs`): a handshake, the first reading sealed, a command (`led on`)\n\
         opened and its answer sealed; the host opens every record. Cycles are the image's marker windows\n\
         (UART, ADC and sleep excluded; marker cost not subtracted: 2 cycles); stack is the deepest SP of the\n\
         step counted from the top of SRAM, so the application's own frames count. On the ATmega4808\n\
         (yasimavr, opt-level s, classic-core timings) the application counts the two windows on chip with\n\
         TCB0 (an empty window's count subtracted), and their stack is painted (§ atmega4808: the sensor\n\
         application — what fits).\n\n\
         | MCU | suite | handshake M | seal a reading | open a command | stack B handshake/seal/open | image flash B | static RAM B |\n\
         |---|---|---:|---:|---:|---|---:|---:|\n",
    );
    // Every MCU's rows: the ATmega4808's application runs in yasimavr, whose
    // session gives no handshake window (its handshake is the harness's,
    // § KEM-MQTT/1 sensor handshake), so its column says so.
    let seals = records
        .iter()
        .filter(|r| r.scheme == APP_SCHEME && r.operation == "seal reading");
    for seal in seals {
        let Some(open) = app(&seal.mcu, &seal.variant, "open command") else {
            continue;
        };
        let h = app(&seal.mcu, &seal.variant, "handshake");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {}/{}/{} | {} | {} |",
            seal.mcu,
            seal.variant,
            h.map_or("–".into(), |h| format!("{:.2}", h.cycles as f64 / 1e6)),
            grouped(seal.cycles),
            grouped(open.cycles),
            h.map_or("–".into(), |h| h.stack_bytes.to_string()),
            seal.stack_bytes,
            open.stack_bytes,
            seal.code_bytes,
            seal.static_ram_bytes.unwrap_or(0)
        );
    }
    let _ = write!(
        s,
        "\n### Energy and battery life (an estimate)\n\n\
         Priced for the default policy — a reading a minute, a handshake a day — on {battery}, at 20 MHz and\n\
         {v} V, with {link} ms awake per request for the link (frame out, the bridge's round trip to the broker,\n\
         the reply in: assumed, not measured) and the datasheets' typical currents:\n\n",
        battery = energy::BATTERY,
        v = energy::SUPPLY_V,
        link = energy::LINK_S * 1000.0,
    );
    for c in energy::all() {
        let _ = writeln!(
            s,
            "- {}: active {} mA, asleep {} µA — {}.",
            c.mcu, c.active_ma, c.sleep_ua, c.source
        );
    }
    s.push_str(
        "\n`t_handshake = cycles/f + 4 × t_link`, `t_reading = seal cycles/f + t_link`,\n\
         `I_avg = I_sleep + (I_active − I_sleep) × (1440 t_reading + t_handshake) / 86,400 s`, `E = V × I_active × t`,\n\
         life = capacity / I_avg (`xtask/src/lab/report/energy.rs`). On the ATmega4808 the handshake is the\n\
         sensor handshake measured in yasimavr (its AVRxt count, § KEM-MQTT/1 sensor handshake) and the seal is\n\
         the count its application image makes on chip in yasimavr (TCB0, classic-core timings: yasimavr stamps\n\
         no marker windows); only the suites whose application image links and runs its session there\n\
         (§ atmega4808: the sensor application — what fits, which gives both windows).\n\n\
         | MCU | suite | handshake mJ | reading µJ | active M cycles/h | average µA | battery years |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for h in &handshakes {
        let Some(seal) = app(&h.mcu, &h.variant, "seal reading") else {
            continue;
        };
        let mut rows = vec![(h.mcu.clone(), h.cycles, seal.cycles)];
        // The 4808: its measured sensor handshake of the same suite, and the
        // seal its application image counted, if that image runs there.
        for m in target::MCUS.iter().filter(|m| !m.simulated) {
            let Some(seal) = app(m.name, &h.variant, "seal reading") else {
                continue;
            };
            if let Some(hs) = records.iter().find(|r| {
                r.scheme == MQTT_SCHEME && r.mcu == m.name && r.variant == h.variant && r.operation == "handshake"
            }) {
                rows.push((m.name.to_string(), hs.cycles_avrxt.unwrap_or(hs.cycles), seal.cycles));
            }
        }
        for (mcu, hs_cycles, seal_cycles) in rows {
            let Some(c) = energy::currents(&mcu) else { continue };
            let e = energy::estimate(c, hs_cycles, seal_cycles);
            let _ = writeln!(
                s,
                "| {mcu} | {} | {:.1} | {:.0} | {:.1} | {:.1} | {:.1} |",
                h.variant,
                e.handshake_mj,
                e.reading_uj,
                e.active_cycles_per_hour / 1e6,
                e.average_ua,
                e.life_years
            );
        }
    }
    let longest_seal = records
        .iter()
        .filter(|r| r.scheme == APP_SCHEME && r.operation == "seal reading")
        .map(|r| r.cycles)
        .max()
        .unwrap_or(0) as f64
        / energy::F_HZ;
    let _ = writeln!(
        s,
        "\nThe longest seal takes {:.1} ms at 20 MHz; the link's assumed {:.0} ms {} a reading's awake time.\n\
         Battery years count the MCU alone: where they exceed the cells' shelf life, the MCU is not what\n\
         empties the battery (self-discharge and the regulator's quiescent current, not counted, are).\n",
        longest_seal * 1000.0,
        energy::LINK_S * 1000.0,
        if longest_seal < energy::LINK_S {
            "dominate"
        } else {
            "do not dominate"
        }
    );
    s
}

/// The "KEM-MQTT under load" section, from `benchmarks/kem-mqtt-load.json`.
pub(super) fn load_summary(run: &records::LoadRun) -> String {
    let mut s = format!(
        "## KEM-MQTT under load (host, loopback)\n\n\
         `cargo xtask mqtt-load`: {} host sensors per suite (`kem-mqtt load`, release build), {} \
         handshaking at a time, each staying connected, then {} readings each; an application \
         subscribed to `plain/#` counts the readings delivered opened. AUTH mode: mosquitto with the \
         plugin, the shipped configuration with the ClientHello rate limits off (one source address \
         sends every hello), its registry holding every suite's fleet. Topic mode: mosquitto with the \
         plugin as a topic guard only, gateway instances: {} (rate limits off as well). Machine: {}; {}; revision `{}`. \
         The sensors run on the same cores as the broker, so every rate is a lower bound for a broker \
         with the machine to itself.\n\n\
         Handshakes/s over the handshake phase; latency from the sensor's TCP connect to its \
         established session. Broker (and gateway) CPU: the process's CPU time per established \
         sensor (its handshake and its readings). Crypto: the broker side's cryptography per \
         handshake measured alone (`BrokerHandshake::accept` + `receive_client_finished`, median \
         of 20); X25519 its hybrid part (the hybrid suite minus its pure KEM). The rest of the \
         broker's time is MQTT: packets, routing, sessions.\n\n\
         | mode | suite | handshakes/s | latency p50 / p99 ms | readings/s (delivered) | broker CPU µs | gateway CPU µs | crypto µs (X25519) | broker RSS peak KiB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        run.sensors,
        run.concurrency,
        run.records,
        run.rows.iter().map(|r| r.gateways).max().unwrap_or(1),
        run.machine,
        run.broker,
        run.git_revision
    );
    for r in &run.rows {
        let x = &r.result;
        let gateway = if x.mode == "topic" {
            format!("{:.0}", r.gateway_cpu_us)
        } else {
            "–".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} ({}/{}) | {:.1} / {:.1} | {:.0} ({}/{}) | {:.0} | {gateway} | {:.0} ({:.0}) | {} |",
            x.mode,
            x.suite,
            x.handshakes_per_second,
            x.established,
            x.sensors,
            x.latency_p50_ms,
            x.latency_p99_ms,
            x.records_per_second,
            x.records_delivered,
            x.records_sent,
            r.broker_cpu_us,
            x.broker_crypto_us,
            x.broker_x25519_us,
            r.broker_peak_rss_kib
        );
    }
    s.push('\n');
    s
}

/// The "sensor registry" section, from `benchmarks/registry.json`.
pub(super) fn registry_summary(run: &records::RegistryRun) -> String {
    let mut s = format!(
        "## The sensor registry at {} sensors\n\n\
         `cargo xtask registry`: a registry of {} `{}` sensors in each store, then {} enrolments and {} \
         revocations, each the release `kem-mqtt provision` or `kem-mqtt revoke` an operator runs \
         (whole command: its start, the broker's keys loaded and checked, a key pair made, the key file \
         and the registry written); medians. The registry's step alone is `RegistryStore::enrol` timed in \
         the xtask (kem-mqtt-host built at opt-level 1, as the xtask is). Revocation: from the start of \
         `kem-mqtt revoke` until each of {} nodes (a `RegistryWatch` on its own connection, polled and \
         applied as the plugin and the gateway do) holds a registry without the sensor. A node's load: \
         the whole registry read and every key validated, as at a broker's start. Targets (issue #52): \
         enrol ≤ 10 ms, revocation on every node ≤ 1 s. Machine: {}; revision `{}`.\n\n\
         | store | on disk | enrol (command) ms | enrol (registry step) ms | revoke (command) ms | revocation on every node ms | node load ms |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        crate::report::table::grouped(run.sensors as u64),
        crate::report::table::grouped(run.sensors as u64),
        run.suite,
        run.runs,
        run.runs,
        run.nodes,
        run.machine,
        run.git_revision
    );
    for r in &run.rows {
        let size = r
            .bytes
            .map_or("server".to_string(), |b| format!("{:.1} MB", b as f64 / 1e6));
        let _ = writeln!(
            s,
            "| {} | {size} | {:.1} | {:.2} | {:.1} | {:.0} | {:.0} |",
            r.store, r.enrol_command_ms, r.enrol_step_ms, r.revoke_command_ms, r.revocation_bite_ms, r.node_load_ms
        );
    }
    s.push_str(
        "\nA database node asks for the registry's version every 100 ms (one small query), and after a change \
         reads only the rows newer than the version it last saw; a `registry.json` node looks at the file every \
         second and then reads it whole. Every node also looks before each record it opens and each command it \
         seals (PostgreSQL: at most every 100 ms), so a revoked sensor's next message is refused however long \
         the node has been idle ([`registry.md`](registry.md)).\n\n",
    );
    s
}

/// The load figures of the last hand-written-client revision beside the
/// current run's, row for row (issue #37).
pub(super) fn load_before_after(before: &records::LoadRun, after: &records::LoadRun) -> String {
    let mut s = format!(
        "### Before and after the maintained MQTT client\n\n\
         Before: revision `{}` (`benchmarks/kem-mqtt-load-before-rumqttc.json`), every client on the \
         crate's own MQTT codec. After: revision `{}`, topic mode's gateway and sensors and, in both \
         modes, the application that counts the readings on `rumqttc` (its blocking client); AUTH \
         mode's sensors stay on the codec (rumqttc 0.25 expects CONNACK right after CONNECT and \
         cannot carry the AUTH exchange), so the AUTH rows' handshake figures changed no MQTT code \
         and show how much two runs differ by themselves. Same command, same fleet ({} sensors per \
         suite, {} at a time, {} readings each); {}.\n\n\
         | mode | suite | handshakes/s before → after | latency p99 ms before → after | readings/s before → after | broker CPU µs before → after | gateway CPU µs before → after |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
        before.git_revision,
        after.git_revision,
        after.sensors,
        after.concurrency,
        after.records,
        if before.machine == after.machine {
            format!("the same machine ({})", after.machine)
        } else {
            format!("NOT the same machine: before {}, after {}", before.machine, after.machine)
        }
    );
    for a in &after.rows {
        let Some(b) = before
            .rows
            .iter()
            .find(|b| b.result.mode == a.result.mode && b.result.suite == a.result.suite)
        else {
            continue;
        };
        let gateway = if a.result.mode == "topic" {
            format!("{:.0} → {:.0}", b.gateway_cpu_us, a.gateway_cpu_us)
        } else {
            "–".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} → {:.0} | {:.1} → {:.1} | {:.0} → {:.0} | {:.0} → {:.0} | {gateway} |",
            a.result.mode,
            a.result.suite,
            b.result.handshakes_per_second,
            a.result.handshakes_per_second,
            b.result.latency_p99_ms,
            a.result.latency_p99_ms,
            b.result.records_per_second,
            a.result.records_per_second,
            b.broker_cpu_us,
            a.broker_cpu_us,
        );
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_table_shows_every_row_with_its_delivery() {
        let result = kem_mqtt_host::load::LoadResult {
            suite: "ml-kem-512+x25519".into(),
            mode: "topic".into(),
            sensors: 10,
            established: 9,
            failed: 1,
            handshakes_per_second: 123.4,
            latency_p50_ms: 1.25,
            latency_p99_ms: 9.5,
            records_sent: 45,
            records_delivered: 44,
            records_per_second: 999.0,
            broker_crypto_us: 250.0,
            broker_x25519_us: 130.0,
            ..Default::default()
        };
        let run = records::LoadRun {
            machine: "test CPU, 2 cores".into(),
            broker: "mosquitto version 2.0.11".into(),
            git_revision: "abc".into(),
            sensors: 10,
            concurrency: 5,
            records: 5,
            rows: vec![records::LoadRow {
                result,
                gateways: 2,
                broker_cpu_us: 150.0,
                gateway_cpu_us: 300.0,
                broker_rss_kib: 1000,
                broker_peak_rss_kib: 1200,
            }],
        };
        let md = load_summary(&run);
        assert!(md.starts_with("## KEM-MQTT under load (host, loopback)\n\n`cargo xtask mqtt-load`: 10 host sensors"));
        assert!(md.contains("gateway instances: 2"), "{md}");
        assert!(
            md.contains(
                "| topic | ml-kem-512+x25519 | 123 (9/10) | 1.2 / 9.5 | 999 (44/45) | 150 | 300 | 250 (130) | 1200 |"
            ),
            "{md}"
        );
        // A stored run survives the round trip through its JSON.
        let json = serde_json::to_string(&run).unwrap();
        assert_eq!(serde_json::from_str::<records::LoadRun>(&json).unwrap(), run);

        // Beside an earlier run: the row pairs up by mode and suite.
        let mut after = run.clone();
        after.git_revision = "def".into();
        after.rows[0].result.handshakes_per_second = 200.0;
        after.rows[0].gateway_cpu_us = 280.0;
        let md = load_before_after(&run, &after);
        assert!(md.contains("Before: revision `abc`"), "{md}");
        assert!(md.contains("After: revision `def`"), "{md}");
        assert!(
            md.contains("| topic | ml-kem-512+x25519 | 123 → 200 | 9.5 → 9.5 | 999 → 999 | 150 → 150 | 300 → 280 |"),
            "{md}"
        );
    }

    #[test]
    fn the_registry_table_has_a_row_per_store_and_reads_back() {
        let row = |store: &str, bytes| records::RegistryRow {
            store: store.into(),
            bytes,
            enrol_command_ms: 3.6,
            enrol_step_ms: 0.28,
            revoke_command_ms: 3.3,
            revocation_bite_ms: 304.0,
            node_load_ms: 459.0,
        };
        let run = records::RegistryRun {
            machine: "test machine".into(),
            git_revision: "abc".into(),
            sensors: 100_000,
            suite: "ml-kem-512+x25519".into(),
            nodes: 3,
            runs: 5,
            rows: vec![row("sqlite", Some(106_258_432)), row("postgresql", None)],
        };
        let md = registry_summary(&run);
        assert!(
            md.starts_with("## The sensor registry at 100,000 sensors\n\n`cargo xtask registry`"),
            "{md}"
        );
        assert!(
            md.contains("| sqlite | 106.3 MB | 3.6 | 0.28 | 3.3 | 304 | 459 |"),
            "{md}"
        );
        assert!(md.contains("| postgresql | server |"), "{md}");
        // Markdown: no line of the text is indented (that would make it code).
        assert!(md.lines().all(|l| !l.starts_with(' ')), "{md}");
        let json = serde_json::to_string(&run).unwrap();
        assert_eq!(serde_json::from_str::<records::RegistryRun>(&json).unwrap(), run);
    }

    #[test]
    fn the_stored_before_run_still_reads() {
        // The side-by-side table silently disappears if the stored "before"
        // file stops parsing: it must parse, with every mode and suite.
        let before = records::load_run_at(&records::load_before_rumqttc_path()).expect("the before-rumqttc load run");
        // The ten suites of its day (ML-KEM-768's came later), in both modes.
        assert_eq!(before.rows.len(), 20);
    }
}
