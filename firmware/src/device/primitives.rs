//! Keccak-f\[1600\], Ascon-p\[12\] and X25519 as measured ops
//! (`avr_wire::primitives`): each reads its input into a static, runs
//! inside the marker window and replies.

use core::hint::black_box;
use core::ptr::addr_of_mut;

use avr_harness::{measure, Io, Op, Status, Uart};
use avr_wire::primitives::{OP_ASCON_P12, OP_KECCAK_F1600, OP_X25519, PRIMITIVES};

/// The input and output of every primitive (the largest: Keccak's state).
static mut STATE: [u8; 200] = [0; 200];

fn keccak(io: &mut Uart) {
    // SAFETY: single-threaded; the one borrow of the static.
    let state = unsafe { &mut *addr_of_mut!(STATE) };
    io.read_bytes(state);
    measure(OP_KECCAK_F1600, || fips202::permute(black_box(&mut *state)));
    io.reply(Status::Ok, 200);
    io.write_bytes(state);
}

fn ascon(io: &mut Uart) {
    // SAFETY: as above.
    let state = unsafe { &mut *addr_of_mut!(STATE) };
    let Some(s) = state.first_chunk_mut::<40>() else {
        return;
    };
    io.read_bytes(s);
    measure(OP_ASCON_P12, || ascon_sponge::permute(black_box(&mut *s), 12));
    io.reply(Status::Ok, 40);
    io.write_bytes(s);
}

fn x25519(io: &mut Uart) {
    // SAFETY: as above.
    let state = unsafe { &mut *addr_of_mut!(STATE) };
    let Some((k, rest)) = state.split_first_chunk_mut::<32>() else {
        return;
    };
    let Some((u, _)) = rest.split_first_chunk_mut::<32>() else {
        return;
    };
    io.read_bytes(k);
    io.read_bytes(u);
    let out = measure(OP_X25519, || x25519_avr::x25519(black_box(&*k), black_box(&*u)));
    io.reply(Status::Ok, 32);
    io.write_bytes(&out);
}

const fn op(i: usize, run: fn(&mut Uart)) -> Op<Uart> {
    let p = PRIMITIVES[i];
    Op {
        id: p.id,
        request_len: p.request_len,
        reply_len: p.reply_len,
        run,
    }
}

/// The three primitive ops, in [`PRIMITIVES`] order.
pub const OPS: [Op<Uart>; 3] = [op(0, keccak), op(1, ascon), op(2, x25519)];
