//! A simulated device running the firmware, spoken to with the harness protocol.

use std::path::Path;

use avr_harness::protocol::{
    decode_header, encode_header, timer_cycles, Status, EMPTY_WINDOW, HEADER_LEN, OP_CYCLES, OP_EMPTY, OP_EXIT,
    OP_PING, TIMERS_LEN, VERSION,
};
use avr_sim::{Marker, Sim};

/// Cycle budget of one request (the slowest op takes a few million).
const BUDGET: u64 = 500_000_000;

/// The firmware in simavr.
pub struct Device {
    sim: Sim,
    /// Registered op ids reported by the firmware.
    pub ops: Vec<u8>,
    /// On-chip timer count minus marker count of the empty window: what the
    /// timers add to every window (the same for all, checked by
    /// [`Device::check_timers`]).
    pub timer_offset: u64,
}

impl Device {
    /// Loads the firmware and checks that it answers a ping.
    pub fn open(elf: &Path, mcu: &str) -> Result<Device, String> {
        let sim = Sim::load(elf, mcu).map_err(|e| e.to_string())?;
        let mut d = Device {
            sim,
            ops: Vec::new(),
            timer_offset: 0,
        };
        let ping = d.call(OP_PING, &[])?;
        if ping.first() != Some(&VERSION) {
            return Err(format!(
                "firmware speaks protocol {:?}, expected {VERSION}",
                ping.first()
            ));
        }
        d.ops = ping[1..].to_vec();
        d.sim.take_markers();
        d.call(OP_EMPTY, &[])?;
        let marker = match avr_sim::windows(&d.sim.take_markers())
            .map_err(|e| e.to_string())?
            .as_slice()
        {
            [w] if w.id == EMPTY_WINDOW => w.cycles,
            other => return Err(format!("empty window: unexpected markers {other:?}")),
        };
        d.timer_offset = d
            .timer_cycles()?
            .checked_sub(marker)
            .ok_or("the on-chip timers count less than the empty marker window")?;
        Ok(d)
    }

    /// The on-chip timers' count of the last measured window (what a board
    /// reports: no markers there).
    pub fn timer_cycles(&mut self) -> Result<u64, String> {
        let raw: [u8; TIMERS_LEN] = self
            .call(OP_CYCLES, &[])?
            .try_into()
            .map_err(|r: Vec<u8>| format!("timer reading of {} bytes", r.len()))?;
        Ok(timer_cycles(raw))
    }

    /// Checks the on-chip timers against the simulator: the last window's
    /// timer count must be its marker count `marker` plus
    /// [`Device::timer_offset`], exactly. Returns the timer count.
    pub fn check_timers(&mut self, id: u8, marker: u64) -> Result<u64, String> {
        let timer = self.timer_cycles()?;
        if timer != marker + self.timer_offset {
            return Err(format!(
                "op 0x{id:02x}: the on-chip timers count {timer} cycles, the markers {marker} (+{} expected)",
                self.timer_offset
            ));
        }
        Ok(timer)
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
