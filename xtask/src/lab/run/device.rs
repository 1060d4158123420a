//! The firmware spoken to with the harness protocol: in simavr, or on a
//! board over a serial port (`bench --device`).

use std::path::Path;
use std::time::Duration;

use avr_sim::{Marker, Sim};
use avr_wire::client::{Client, Error, Stream, Transport};
use avr_wire::frame::{EMPTY_WINDOW, OP_EMPTY};

/// A board's serial port.
type Port = Stream<Box<dyn avr_serial::serialport::SerialPort>>;

/// Where the firmware runs: both are transports of the one client.
enum Backend {
    Sim(Box<Sim>),
    Board(Port),
}

impl Transport for Backend {
    fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        match self {
            Backend::Sim(s) => Transport::send(s.as_mut(), bytes),
            Backend::Board(p) => p.send(bytes),
        }
    }

    fn receive(&mut self, n: usize) -> Result<Vec<u8>, Error> {
        match self {
            Backend::Sim(s) => Transport::receive(s.as_mut(), n),
            Backend::Board(p) => p.receive(n),
        }
    }
}

/// The firmware in simavr, or on a board.
pub struct Device {
    client: Client<Backend>,
    board: bool,
    /// Registered op ids reported by the firmware.
    pub ops: Vec<u8>,
    /// On-chip timer count minus marker count of the empty window: what the
    /// timers add to every window (the same for all, checked by
    /// [`Device::check_timers`]). 0 on a board, which has no markers.
    pub timer_offset: u64,
}

/// The measure of one window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Cycles: the marker count in simavr, the timers' count on a board
    /// (the empty window's cost included either way: subtract the empty
    /// window's, measured the same way).
    pub cycles: u64,
    /// Stack bytes: simavr's SP tracking, the painted measure on a board.
    pub stack: u32,
}

impl Device {
    fn on(backend: Backend) -> Result<Device, String> {
        let board = matches!(backend, Backend::Board(_));
        let mut client = Client::new(backend);
        let ops = client.ping().map_err(|e| e.to_string())?;
        Ok(Device {
            client,
            board,
            ops,
            timer_offset: 0,
        })
    }

    /// Loads the firmware in simavr and checks that it answers a ping.
    pub fn open(elf: &Path, mcu: &str) -> Result<Device, String> {
        let sim = Sim::load(elf, mcu).map_err(|e| e.to_string())?;
        let mut d = Device::on(Backend::Sim(Box::new(sim)))?;
        d.take_markers();
        d.call(OP_EMPTY, &[])?;
        let marker = match avr_sim::windows(&d.take_markers())
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

    /// Opens a board running the firmware on serial port `path` at `baud`
    /// and checks that it answers a ping. `timeout` bounds each reply (the
    /// slowest operation included).
    pub fn open_board(path: &str, baud: u32, timeout: Duration) -> Result<Device, String> {
        let port = avr_serial::open(path, baud, timeout).map_err(|e| e.to_string())?;
        Device::on(Backend::Board(Stream(port)))
    }

    /// Whether this is a board (no markers, profile or simulated cycles).
    pub fn is_board(&self) -> bool {
        self.board
    }

    /// Sends one request and returns the reply payload (an error unless the status is Ok).
    pub fn call(&mut self, op: u8, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.client.call(op, payload).map_err(|e| match e {
            Error::Refused { .. } => e.to_string(),
            e => format!("op 0x{op:02x}: {e}"),
        })
    }

    /// Runs `call`, which must run measured operation `id` once, and returns
    /// its result with the window's measure. In simavr the window is the
    /// marker pair, and the on-chip timers' count is checked against it
    /// ([`Device::check_timers`]); on a board the timers are the measure.
    pub fn measure_window<T>(
        &mut self,
        id: u8,
        call: impl FnOnce(&mut Device) -> Result<T, String>,
    ) -> Result<(T, Window), String> {
        if self.is_board() {
            let r = call(self)?;
            let cycles = self.timer_cycles()?;
            let stack = self.painted_stack()?;
            return Ok((r, Window { cycles, stack }));
        }
        self.take_markers();
        let r = call(self)?;
        let w = avr_sim::windows(&self.take_markers()).map_err(|e| e.to_string())?;
        match w.as_slice() {
            [w] if w.id == id => {
                self.check_timers(id, w.cycles)?;
                Ok((
                    r,
                    Window {
                        cycles: w.cycles,
                        stack: w.stack_bytes as u32,
                    },
                ))
            }
            other => Err(format!("op 0x{id:02x}: expected one marker window, got {other:?}")),
        }
    }

    /// The painted stack of the last measured window.
    pub fn painted_stack(&mut self) -> Result<u32, String> {
        self.client.stack().map(u32::from).map_err(|e| e.to_string())
    }

    /// The on-chip timers' count of the last measured window (what a board
    /// reports: no markers there).
    pub fn timer_cycles(&mut self) -> Result<u64, String> {
        self.client.timer_cycles().map_err(|e| e.to_string())
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

    fn sim(&mut self) -> Option<&mut Sim> {
        match self.client.transport_mut() {
            Backend::Sim(s) => Some(s),
            Backend::Board(_) => None,
        }
    }

    /// Marker writes since the last call (none on a board).
    pub fn take_markers(&mut self) -> Vec<Marker> {
        self.sim().map(|s| s.take_markers()).unwrap_or_default()
    }

    /// Turns the simulator's per-instruction profile of marker windows on or off.
    pub fn set_profiling(&mut self, on: bool) {
        if let Some(s) = self.sim() {
            s.set_profiling(on)
        }
    }

    /// Takes the instruction profile (counter per flash word) and zeroes it
    /// (empty on a board).
    pub fn take_profile(&mut self) -> Vec<u32> {
        self.sim().map(|s| s.take_profile()).unwrap_or_default()
    }

    /// `len` bytes of the firmware's data space from `addr` (e.g. a static,
    /// to check it holds no secret after an operation), once the firmware
    /// has finished the last operation: the simulation stops as the reply's
    /// last byte goes out, before the handler's own end, so a ping's
    /// answer is awaited first. Simulator only.
    pub fn read_data(&mut self, addr: u32, len: usize) -> Result<Vec<u8>, String> {
        self.client.ping().map_err(|e| e.to_string())?;
        self.sim()
            .ok_or("a board's memory cannot be read")?
            .read_data(addr, len)
            .ok_or_else(|| format!("data space 0x{addr:x}+{len} is outside the MCU's RAM"))
    }

    /// Cycles simulated so far (0 on a board).
    pub fn cycle(&mut self) -> u64 {
        self.sim().map(|s| s.cycle()).unwrap_or(0)
    }

    /// Asks the firmware to stop and waits until it has (`cli; sleep`).
    pub fn close(mut self) -> Result<(), String> {
        self.client.exit().map_err(|e| e.to_string())?;
        match self.sim() {
            Some(s) => s.run_to_exit(1_000_000).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

/// Little-endian bytes of polynomials, concatenated.
pub fn encode(polys: &[Vec<i16>]) -> Vec<u8> {
    polys.iter().flatten().flat_map(|x| x.to_le_bytes()).collect()
}
