//! A simulated device running the firmware, spoken to with the harness protocol.

use std::path::Path;

use avr_harness::protocol::{decode_header, encode_header, Status, HEADER_LEN, OP_EXIT, OP_PING, VERSION};
use avr_sim::{Marker, Sim};

/// Cycle budget of one request (the slowest op takes a few million).
const BUDGET: u64 = 500_000_000;

/// The firmware in simavr.
pub struct Device {
    sim: Sim,
    /// Registered op ids reported by the firmware.
    pub ops: Vec<u8>,
}

impl Device {
    /// Loads the firmware and checks that it answers a ping.
    pub fn open(elf: &Path, mcu: &str) -> Result<Device, String> {
        let sim = Sim::load(elf, mcu).map_err(|e| e.to_string())?;
        let mut d = Device { sim, ops: Vec::new() };
        let ping = d.call(OP_PING, &[])?;
        if ping.first() != Some(&VERSION) {
            return Err(format!(
                "firmware speaks protocol {:?}, expected {VERSION}",
                ping.first()
            ));
        }
        d.ops = ping[1..].to_vec();
        d.sim.take_markers();
        Ok(d)
    }

    /// Sends one request and returns the reply payload (an error unless the status is Ok).
    pub fn call(&mut self, op: u8, payload: &[u8]) -> Result<Vec<u8>, String> {
        let len = u16::try_from(payload.len()).map_err(|_| "payload too long".to_string())?;
        self.sim.send(&encode_header(op, len));
        self.sim.send(payload);
        let err = |e: avr_sim::Error| format!("op 0x{op:02x}: {e}");
        let h = self.sim.run_until_output(HEADER_LEN, BUDGET).map_err(err)?;
        let (status, len) = decode_header([h[0], h[1], h[2]]);
        let body = self.sim.run_until_output(len as usize, BUDGET).map_err(err)?;
        match Status::from_u8(status) {
            Some(Status::Ok) => Ok(body),
            Some(s) => Err(format!("op 0x{op:02x}: firmware answered {s:?}")),
            None => Err(format!("op 0x{op:02x}: bad status byte 0x{status:02x}")),
        }
    }

    /// Marker writes since the last call.
    pub fn take_markers(&mut self) -> Vec<Marker> {
        self.sim.take_markers()
    }

    /// Turns the simulator's per-instruction profile of marker windows on or off.
    pub fn set_profiling(&mut self, on: bool) {
        self.sim.set_profiling(on)
    }

    /// Takes the instruction profile (counter per flash word) and zeroes it.
    pub fn take_profile(&mut self) -> Vec<u32> {
        self.sim.take_profile()
    }

    /// `len` bytes of the firmware's data space from `addr` (e.g. a static,
    /// to check it holds no secret after an operation), once the firmware
    /// has finished the last operation: the simulation stops as the reply's
    /// last byte goes out, before the handler's own end, so a ping's
    /// answer is awaited first.
    pub fn read_data(&mut self, addr: u32, len: usize) -> Result<Vec<u8>, String> {
        self.call(OP_PING, &[])?;
        self.sim
            .read_data(addr, len)
            .ok_or_else(|| format!("data space 0x{addr:x}+{len} is outside the MCU's RAM"))
    }

    /// Cycles simulated so far.
    pub fn cycle(&self) -> u64 {
        self.sim.cycle()
    }

    /// Asks the firmware to stop and waits until it has (`cli; sleep`).
    pub fn close(mut self) -> Result<(), String> {
        self.call(OP_EXIT, &[])?;
        self.sim.run_to_exit(1_000_000).map_err(|e| e.to_string())
    }
}

/// Little-endian bytes of polynomials, concatenated.
pub fn encode(polys: &[Vec<i16>]) -> Vec<u8> {
    polys.iter().flatten().flat_map(|x| x.to_le_bytes()).collect()
}
