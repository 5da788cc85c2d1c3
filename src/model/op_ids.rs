//! Operation ids and their order (Decision 7). An id packs the device that made the operation
//! and that device's sequence number: `id = slot · 2^40 + seq`, where the slot is the device's
//! number in the wiki (0 for the device that began it, so a wiki on one device numbers its
//! operations 1, 2, 3…; a device that joins a folder another keeps takes a free slot). Ids from
//! two devices never collide, and stay below 2^53, exact as JavaScript numbers.
//!
//! Operations are in a total order by `(time, slot, seq)`: the same on every device that holds
//! them. A device's own operations are in its sequence order, whatever its clock did: an
//! operation's time in the order is never earlier than the one before it of the same slot.

use std::collections::BTreeMap;

use super::{OpId, Operation};
use crate::clock::Millis;

/// Bits of an id that hold the sequence number.
pub const OP_SEQ_BITS: u32 = 40;

/// The largest slot (ids stay below 2^53).
pub const MAX_SLOT: u16 = (1 << 13) - 1;

/// The slot of the device that made operation `id`.
pub fn op_slot(id: OpId) -> u16 {
    (id >> OP_SEQ_BITS) as u16
}

/// The sequence number of operation `id` on its device.
pub fn op_seq(id: OpId) -> u64 {
    id & ((1 << OP_SEQ_BITS) - 1)
}

/// The id of sequence number `seq` on the device of `slot` (seq 0: before its first operation).
pub fn op_id(slot: u16, seq: u64) -> OpId {
    (u64::from(slot) << OP_SEQ_BITS) | op_seq(seq)
}

/// Where an operation is in the total order: `(time, slot, seq)`, the time raised to that of
/// the operation before it of the same slot when the clock went back.
pub type OpOrder = (Millis, u16, u64);

/// The order key of every operation in `ops` (see the module docs), by id.
pub fn op_orders<'a>(ops: impl IntoIterator<Item = &'a Operation>) -> BTreeMap<OpId, OpOrder> {
    let mut by_id: Vec<(OpId, Millis)> = ops.into_iter().map(|o| (o.id, o.time)).collect();
    // Ids of one slot sort by sequence number.
    by_id.sort_unstable();
    let mut out = BTreeMap::new();
    let mut prev: Option<(u16, Millis)> = None;
    for (id, time) in by_id {
        let slot = op_slot(id);
        let time = match prev {
            Some((s, t)) if s == slot => time.max(t),
            _ => time,
        };
        prev = Some((slot, time));
        out.insert(id, (time, slot, op_seq(id)));
    }
    out
}

/// Adds operation `id` to `seen` (one id per slot, the greatest: [`Operation::seen`]).
pub fn note_seen(seen: &mut Vec<OpId>, id: OpId) {
    match seen.iter_mut().find(|s| op_slot(**s) == op_slot(id)) {
        Some(s) => *s = (*s).max(id),
        None => {
            seen.push(id);
            seen.sort_unstable();
        }
    }
}

/// Whether operation `other` was held where `op` was made when it was made: an earlier one of
/// the same device (or `op` itself), or one of another device up to the last `op` saw of it
/// ([`Operation::seen`]; a device applies another's operations in their sequence order, so
/// what it holds of another is a prefix of its operations). An operation from a build before
/// `seen` (`None`) is taken to have seen every operation earlier in `(time, device, seq)`, as
/// the later writer was taken to then.
pub fn seen_by(op: &Operation, other: &Operation) -> bool {
    if op_slot(other.id) == op_slot(op.id) {
        return other.id <= op.id;
    }
    match &op.seen {
        Some(seen) => seen
            .iter()
            .any(|s| op_slot(*s) == op_slot(other.id) && *s >= other.id),
        None => {
            let at = |o: &Operation| (o.time, op_slot(o.id), op_seq(o.id));
            at(other) < at(op)
        }
    }
}

/// Sorts `ops` into the total order (see the module docs).
pub fn sort_operations(ops: &mut [Operation]) {
    let order = op_orders(ops.iter());
    ops.sort_by_key(|o| order[&o.id]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OperationKind, TokenUsage};

    fn op(id: OpId, time: Millis) -> Operation {
        Operation {
            id,
            kind: OperationKind::HumanEdit,
            time,
            summary: String::new(),
            pages: vec![],
            sources: vec![],
            usage: TokenUsage::default(),
            rolled_back_by: None,
            seen: Some(vec![]),
        }
    }

    #[test]
    fn an_operation_saw_what_its_seen_covers_or_before_seen_what_came_earlier() {
        let b = |seq| op_id(3, seq);
        let (a1, a2, b1) = (op(1, 100), op(2, 300), op(b(1), 200));
        let mut b2 = op(b(2), 400);
        // Its own device's earlier operations; another's only as far as `seen` says.
        assert!(seen_by(&b2, &b1) && !seen_by(&b2, &a1));
        b2.seen = Some(vec![1]);
        assert!(seen_by(&b2, &a1) && !seen_by(&b2, &a2));
        // Made by a build before `seen`: every operation earlier in the order, none later.
        b2.seen = None;
        assert!(seen_by(&b2, &a1) && seen_by(&b2, &a2));
        let mut early = op(b(1), 150);
        early.seen = None;
        assert!(seen_by(&early, &a1) && !seen_by(&early, &a2));
    }

    #[test]
    fn ids_pack_slot_and_sequence_below_two_to_the_53() {
        let id = op_id(MAX_SLOT, (1 << OP_SEQ_BITS) - 1);
        assert!(id < 1 << 53);
        assert_eq!(
            (op_slot(id), op_seq(id)),
            (MAX_SLOT, (1 << OP_SEQ_BITS) - 1)
        );
        assert_eq!(op_id(0, 7), 7);
        assert_eq!((op_slot(7), op_seq(7)), (0, 7));
    }

    #[test]
    fn the_order_is_by_time_then_device_and_keeps_a_devices_sequence() {
        let b = |seq| op_id(3, seq);
        let mut ops = vec![
            op(b(2), 250),
            op(2, 200),
            op(b(1), 100),
            op(1, 100),
            op(3, 150),
        ];
        sort_operations(&mut ops);
        let ids: Vec<OpId> = ops.iter().map(|o| o.id).collect();
        // Op 3's clock went back (150 after 200): it stays after op 2 of its own device.
        assert_eq!(ids, vec![1, b(1), 2, 3, b(2)]);
    }
}
