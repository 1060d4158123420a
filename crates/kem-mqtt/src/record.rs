//! The record layer: Ascon-AEAD128 (SP 800-232) with sequence numbers,
//! topic-bound associated data and a sliding replay window.

use ascon_sponge::aead;
use zeroize::Zeroize;

use crate::Error;

pub use kem_mqtt_wire::{MAX_TOPIC_LEN, RECORD_OVERHEAD, SEQ_LEN, TAG_LEN};
/// Width of the replay window: a record up to this many sequence numbers
/// older than the newest accepted one is accepted once; older ones are rejected.
pub const REPLAY_WINDOW: u64 = 64;
/// Label at the start of every record's associated data.
pub const RECORD_LABEL: &[u8] = b"KEM-MQTT/1 record";

/// Which side of the session this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The sensor (MQTT client): sends client→broker records.
    Sensor,
    /// The broker or gateway: sends broker→client records.
    Broker,
}

/// Key and IV of one direction.
#[derive(Clone)]
pub(crate) struct DirectionKeys {
    pub(crate) key: [u8; 16],
    pub(crate) iv: [u8; 16],
}

impl Drop for DirectionKeys {
    fn drop(&mut self) {
        self.key.zeroize();
        self.iv.zeroize();
    }
}

/// Sliding window over received sequence numbers.
#[derive(Clone, Copy, Debug, Default)]
struct ReplayWindow {
    /// Highest accepted sequence number, if any.
    highest: Option<u64>,
    /// Bit i set: `highest - i` was accepted.
    seen: u64,
}

impl ReplayWindow {
    fn check(&self, seq: u64) -> Result<(), Error> {
        let Some(h) = self.highest else { return Ok(()) };
        if seq > h {
            return Ok(());
        }
        let age = h - seq;
        if age >= REPLAY_WINDOW {
            return Err(Error::RecordTooOld);
        }
        if self.seen & (1u64 << age) != 0 {
            return Err(Error::RecordReplayed);
        }
        Ok(())
    }

    fn accept(&mut self, seq: u64) {
        match self.highest {
            Some(h) if seq <= h => self.seen |= 1u64 << (h - seq),
            Some(h) => {
                let shift = seq - h;
                self.seen = if shift >= 64 { 0 } else { self.seen << shift };
                self.seen |= 1;
                self.highest = Some(seq);
            }
            None => {
                self.seen = 1;
                self.highest = Some(seq);
            }
        }
    }
}

/// An established session: seals and opens records. Keys are zeroized on drop.
pub struct Session {
    role: Role,
    send: DirectionKeys,
    recv: DirectionKeys,
    send_seq: u64,
    window: ReplayWindow,
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("role", &self.role)
            .field("send_seq", &self.send_seq)
            .finish_non_exhaustive()
    }
}

/// Direction byte in the associated data: 0 = sensor → broker, 1 = broker → sensor.
fn direction_byte(sender: Role) -> u8 {
    match sender {
        Role::Sensor => 0,
        Role::Broker => 1,
    }
}

impl Session {
    pub(crate) fn new(role: Role, c2b: DirectionKeys, b2c: DirectionKeys) -> Session {
        let (send, recv) = match role {
            Role::Sensor => (c2b, b2c),
            Role::Broker => (b2c, c2b),
        };
        Session {
            role,
            send,
            recv,
            send_seq: 0,
            window: ReplayWindow::default(),
        }
    }

    /// This side's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The sequence number the next sealed record will carry.
    pub fn next_send_seq(&self) -> u64 {
        self.send_seq
    }

    /// Seals `plaintext` for `topic` into `out` (needs `plaintext.len() +`
    /// [`RECORD_OVERHEAD`] bytes) and returns the record length.
    pub fn seal(&mut self, topic: &[u8], plaintext: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let len = plaintext.len() + RECORD_OVERHEAD;
        if out.len() < len {
            return Err(Error::BufferTooSmall { needed: len });
        }
        if self.send_seq == u64::MAX {
            return Err(Error::SequenceExhausted);
        }
        let seq = self.send_seq;
        let mut ad = [0u8; RECORD_LABEL.len() + 3 + MAX_TOPIC_LEN];
        let ad_len = associated_data(&mut ad, direction_byte(self.role), topic)?;
        let (head, rest) = out.split_at_mut(SEQ_LEN);
        head.copy_from_slice(&seq.to_be_bytes());
        let (body, tail) = rest.split_at_mut(plaintext.len());
        body.copy_from_slice(plaintext);
        let nonce = nonce(&self.send.iv, seq);
        let tag = aead::encrypt(&self.send.key, &nonce, ad.get(..ad_len).unwrap_or(&[]), body);
        let tag_out = tail.get_mut(..TAG_LEN).ok_or(Error::BufferTooSmall { needed: len })?;
        tag_out.copy_from_slice(&tag);
        self.send_seq += 1;
        Ok(len)
    }

    /// Opens a `record` received on `topic` into `out` (needs
    /// `record.len() -` [`RECORD_OVERHEAD`] bytes) and returns the plaintext
    /// length. Replays and records older than the window are rejected
    /// before decryption; the window moves only for authentic records.
    pub fn open(&mut self, topic: &[u8], record: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        if record.len() < RECORD_OVERHEAD {
            return Err(Error::RecordTruncated);
        }
        let (head, rest) = record.split_at(SEQ_LEN);
        let (ct, tag) = rest.split_at(rest.len() - TAG_LEN);
        let mut seq_bytes = [0u8; SEQ_LEN];
        seq_bytes.copy_from_slice(head);
        let seq = u64::from_be_bytes(seq_bytes);
        let pt = out
            .get_mut(..ct.len())
            .ok_or(Error::BufferTooSmall { needed: ct.len() })?;
        self.window.check(seq)?;
        let peer = match self.role {
            Role::Sensor => Role::Broker,
            Role::Broker => Role::Sensor,
        };
        let mut ad = [0u8; RECORD_LABEL.len() + 3 + MAX_TOPIC_LEN];
        let ad_len = associated_data(&mut ad, direction_byte(peer), topic)?;
        pt.copy_from_slice(ct);
        let tag: &[u8; TAG_LEN] = tag.try_into().map_err(|_| Error::RecordTruncated)?;
        let nonce = nonce(&self.recv.iv, seq);
        if aead::decrypt(&self.recv.key, &nonce, ad.get(..ad_len).unwrap_or(&[]), pt, tag).is_err() {
            // (aead::decrypt has zeroed pt already.)
            return Err(Error::RecordAuthFailed);
        }
        self.window.accept(seq);
        Ok(ct.len())
    }
}

fn nonce(iv: &[u8; 16], seq: u64) -> [u8; 16] {
    let mut n = *iv;
    for (b, s) in n[8..].iter_mut().zip(seq.to_be_bytes()) {
        *b ^= s;
    }
    n
}

/// `RECORD_LABEL ‖ direction ‖ u16_be(|topic|) ‖ topic`.
fn associated_data(buf: &mut [u8], direction: u8, topic: &[u8]) -> Result<usize, Error> {
    if topic.len() > MAX_TOPIC_LEN {
        return Err(Error::TopicTooLong);
    }
    let l = RECORD_LABEL.len();
    let total = l + 3 + topic.len();
    let out = buf.get_mut(..total).ok_or(Error::TopicTooLong)?;
    out[..l].copy_from_slice(RECORD_LABEL);
    out[l] = direction;
    out[l + 1..l + 3].copy_from_slice(&(topic.len() as u16).to_be_bytes());
    out[l + 3..].copy_from_slice(topic);
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_accepts_new_and_reordered_rejects_replayed_and_old() {
        let mut w = ReplayWindow::default();
        for seq in [5u64, 3, 7, 6, 4] {
            w.check(seq).unwrap();
            w.accept(seq);
        }
        assert_eq!(w.check(5), Err(Error::RecordReplayed));
        w.check(100).unwrap();
        w.accept(100);
        assert_eq!(w.check(36), Err(Error::RecordTooOld));
        w.check(37).unwrap();
        assert_eq!(w.check(100), Err(Error::RecordReplayed));
    }
}
