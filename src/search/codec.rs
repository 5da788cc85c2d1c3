//! Little-endian byte writer and a bounds-checked reader for the search records.
//!
//! *Invariant:* the reader never panics and never allocates more than the input could hold: every
//! length is checked against the bytes that remain before anything is allocated, so a corrupt
//! record yields a [`DecodeError`], not a panic or an out-of-memory abort.

/// Why a search record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl DecodeError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        DecodeError(msg.into())
    }
}

/// Shorthand for codec results.
pub type DecodeResult<T> = Result<T, DecodeError>;

/// How many bytes a streaming [`Writer`] gathers before it hands them to its sink.
pub(crate) const STREAM_CHUNK: usize = 64 * 1024;

/// Where a streaming [`Writer`] hands its bytes.
pub(crate) type Sink<'s> = &'s mut dyn FnMut(&[u8]);

/// Appends little-endian values to a byte buffer; a streaming writer ([`Writer::streaming`])
/// hands its buffer to a sink every [`STREAM_CHUNK`] bytes instead of growing it, so a record of
/// any size is written with 64 KB of memory.
#[derive(Default)]
pub(crate) struct Writer<'s> {
    pub(crate) buf: Vec<u8>,
    sink: Option<Sink<'s>>,
}

impl std::fmt::Debug for Writer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("buffered", &self.buf.len())
            .field("streaming", &self.sink.is_some())
            .finish()
    }
}

impl<'s> Writer<'s> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
            sink: None,
        }
    }
    /// A writer that passes its bytes, in order, to `sink` in pieces of about [`STREAM_CHUNK`];
    /// call [`Writer::flush`] at the end.
    pub(crate) fn streaming(sink: Sink<'s>) -> Self {
        Writer {
            buf: Vec::with_capacity(STREAM_CHUNK + 64),
            sink: Some(sink),
        }
    }
    /// Hands what is buffered to the sink (streaming writers only).
    pub(crate) fn flush(&mut self) {
        if let Some(sink) = self.sink.as_mut() {
            if !self.buf.is_empty() {
                sink(&self.buf);
                self.buf.clear();
            }
        }
    }
    fn spill(&mut self) {
        if self.buf.len() >= STREAM_CHUNK && self.sink.is_some() {
            self.flush();
        }
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
        self.spill();
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.spill();
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.spill();
    }
    pub(crate) fn f32(&mut self, v: f32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.spill();
    }
    /// A `u32` length, then the bytes.
    pub(crate) fn bytes(&mut self, v: &[u8]) {
        self.len(v.len());
        self.raw(v);
    }
    /// The bytes, without a length.
    pub(crate) fn raw(&mut self, mut v: &[u8]) {
        if self.sink.is_none() {
            self.buf.extend_from_slice(v);
            return;
        }
        while !v.is_empty() {
            let take = STREAM_CHUNK
                .saturating_sub(self.buf.len())
                .clamp(1, v.len());
            self.buf.extend_from_slice(&v[..take]);
            v = &v[take..];
            self.spill();
        }
    }
    pub(crate) fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    /// A `u32` count, then the values.
    pub(crate) fn u32s(&mut self, v: &[u32]) {
        self.words(v, |x| x.to_le_bytes());
    }
    /// A `u32` count, then the values.
    pub(crate) fn f32s(&mut self, v: &[f32]) {
        self.words(v, |x| x.to_le_bytes());
    }
    /// A `u32` count, then each value's 4 little-endian bytes (reserved once when buffering,
    /// handed over per chunk when streaming; copied as they are on little-endian targets).
    fn words<T: bytemuck::Pod>(&mut self, v: &[T], le: impl Fn(T) -> [u8; 4]) {
        self.len(v.len());
        if self.sink.is_none() {
            self.buf.reserve(v.len() * 4);
        }
        for part in v.chunks(STREAM_CHUNK / 4) {
            if cfg!(target_endian = "little") {
                self.buf.extend_from_slice(bytemuck::cast_slice(part));
            } else {
                for &x in part {
                    self.buf.extend_from_slice(&le(x));
                }
            }
            self.spill();
        }
    }
    /// `v` as an unsigned LEB128 varint: 7 bits per byte, low bits first, the high bit set on
    /// every byte but the last (1 byte below 128, at most 5).
    pub(crate) fn varint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
        self.spill();
    }
    pub(crate) fn len(&mut self, n: usize) {
        // Every count we write is bounded by u32 doc/term/row ids; saturate instead of panicking.
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// Bytes [`Writer::varint`] writes for `v`.
pub(crate) fn varint_len(v: u32) -> usize {
    match v {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
}

/// Reads the varints [`Writer::varint`] wrote, one after another, from a byte slice.
#[derive(Debug)]
pub(crate) struct Varints<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Varints<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Varints { buf, pos: 0 }
    }
    /// The next varint. Errors on a truncated one, or one whose fifth byte carries more than the
    /// top 4 bits of a `u32` or a continuation bit (never written). Non-minimal encodings (such
    /// as `85 00` for 5) are accepted.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> DecodeResult<u32> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u32::from(b))
            }
            _ => self.next_long(),
        }
    }
    #[inline(never)]
    fn next_long(&mut self) -> DecodeResult<u32> {
        let mut v = 0u32;
        for i in 0..5 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(DecodeError::new("truncated varint"));
            };
            self.pos += 1;
            if i == 4 && b > 0x0f {
                return Err(DecodeError::new("varint above u32::MAX or over 5 bytes"));
            }
            v |= u32::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        // Not reached: the fifth byte returned or failed above.
        Err(DecodeError::new("varint above u32::MAX or over 5 bytes"))
    }
    /// Fills `out` with the next `out.len()` varints: one tight loop with the one- and
    /// two-byte cases (nearly every doc-id gap and tf) inline, longer ones through
    /// [`Varints::next`]'s slow path.
    pub(crate) fn read_into(&mut self, out: &mut [u32]) -> DecodeResult<()> {
        let buf = self.buf;
        let mut pos = self.pos;
        for slot in out.iter_mut() {
            match (buf.get(pos), buf.get(pos + 1)) {
                (Some(&b), _) if b < 0x80 => {
                    *slot = u32::from(b);
                    pos += 1;
                }
                (Some(&b), Some(&c)) if c < 0x80 => {
                    *slot = u32::from(b & 0x7f) | u32::from(c) << 7;
                    pos += 2;
                }
                _ => {
                    self.pos = pos;
                    *slot = self.next_long()?;
                    pos = self.pos;
                }
            }
        }
        self.pos = pos;
        Ok(())
    }
    /// True when every byte was read.
    pub(crate) fn is_done(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// Reads little-endian values, checking every bound.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub(crate) fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        if n > self.remaining() {
            return Err(DecodeError::new(format!(
                "truncated: need {n} bytes at offset {}, {} left",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> DecodeResult<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub(crate) fn u32(&mut self) -> DecodeResult<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> DecodeResult<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(crate) fn f32(&mut self) -> DecodeResult<f32> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    /// A count written by [`Writer::len`], checked so that `count * elem_size` bytes remain.
    pub(crate) fn len(&mut self, elem_size: usize) -> DecodeResult<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(elem_size.max(1)) > self.remaining() {
            return Err(DecodeError::new(format!(
                "count {n} × {elem_size} bytes exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(n)
    }
    pub(crate) fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let n = self.len(1)?;
        self.take(n)
    }
    pub(crate) fn str(&mut self) -> DecodeResult<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|e| DecodeError::new(format!("bad UTF-8: {e}")))
    }
    pub(crate) fn u32s(&mut self) -> DecodeResult<Vec<u32>> {
        let mut v = self.words::<u32>()?;
        if cfg!(target_endian = "big") {
            v.iter_mut().for_each(|x| *x = u32::from_le(*x));
        }
        Ok(v)
    }
    pub(crate) fn f32s(&mut self) -> DecodeResult<Vec<f32>> {
        let mut v = self.words::<f32>()?;
        if cfg!(target_endian = "big") {
            v.iter_mut()
                .for_each(|x| *x = f32::from_bits(u32::from_le(x.to_bits())));
        }
        Ok(v)
    }
    /// A count, then that many 4-byte words copied as they are (one `memcpy`; the caller turns
    /// little-endian into native order on big-endian targets).
    fn words<T: bytemuck::Pod + Default>(&mut self) -> DecodeResult<Vec<T>> {
        let n = self.len(4)?;
        let raw = self.take(n * 4)?;
        let mut v = vec![T::default(); n];
        bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(raw);
        Ok(v)
    }
    pub(crate) fn finish(&self) -> DecodeResult<()> {
        if self.remaining() != 0 {
            return Err(DecodeError::new(format!(
                "{} trailing bytes",
                self.remaining()
            )));
        }
        Ok(())
    }
}

/// The checksum of a stored record's payload: XXH3-64, seed 0 (Y. Collet, xxHash,
/// <https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md>; the `xxhash-rust` crate).
/// Its independent lanes run several times faster than [`hash64`]'s serial chain, which
/// matters when opening a wiki hashes every record (5 MB of BM25 records at 10k pages, plus
/// 15 MB of vectors at 384-d).
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// [`checksum`] over bytes given in pieces (any sizes, in order): `update` each, then `finish`.
#[derive(Clone, Default)]
pub(crate) struct Checksum(xxhash_rust::xxh3::Xxh3);

impl Checksum {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0.digest()
    }
}

/// A fast 64-bit hash (FxHash-style multiply–rotate over 8-byte words). Not cryptographic: it
/// detects corruption of stored records and spreads dictionary keys.
pub(crate) fn hash64(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    }
    // Final avalanche (splitmix64) so that the low bits used by hash tables are well mixed.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Folds `words` into the running hash `h` (a content fingerprint for record generations).
pub(crate) fn fold_words(mut h: u64, words: impl IntoIterator<Item = u32>) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    for w in words {
        h = (h.rotate_left(23) ^ u64::from(w)).wrapping_mul(K);
    }
    hash64(&h.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streaming writer hands its sink exactly the bytes a buffering writer would hold, in
    /// pieces no larger than a chunk plus one value; the piecewise hash equals the one-shot hash
    /// however the bytes are split.
    #[test]
    fn streaming_writer_and_piecewise_hash() {
        let big: Vec<u32> = (0..50_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let floats: Vec<f32> = (0..40_000).map(|i| i as f32 / 7.0).collect();
        let blob: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let write = |w: &mut Writer| {
            w.u8(1);
            w.u32s(&big);
            w.str("明月几时有");
            w.f32s(&floats);
            w.bytes(&blob);
            w.u64(9);
        };
        let mut whole = Writer::default();
        write(&mut whole);
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut sink = |b: &[u8]| pieces.push(b.to_vec());
        let mut w = Writer::streaming(&mut sink);
        write(&mut w);
        w.flush();
        drop(w);
        assert!(pieces.len() >= 8, "{}", pieces.len());
        assert!(pieces
            .iter()
            .all(|p| p.len() < STREAM_CHUNK + STREAM_CHUNK / 4 * 4));
        assert_eq!(pieces.concat(), whole.buf);

        // A buffering writer of the exact size never grows (no doubling copy).
        let exact = 1
            + 4
            + big.len() * 4
            + 4
            + "明月几时有".len()
            + 4
            + floats.len() * 4
            + 4
            + blob.len()
            + 8;
        let mut sized = Writer::with_capacity(exact);
        write(&mut sized);
        assert_eq!((sized.buf.len(), sized.buf.capacity()), (exact, exact));

        let data = &whole.buf;
        for split in [1usize, 3, 7, 8, 9, 1000, 65_537] {
            let mut h = Checksum::default();
            for part in data.chunks(split) {
                h.update(part);
            }
            assert_eq!(h.finish(), checksum(data), "split {split}");
        }
        for n in 0..300 {
            let mut h = Checksum::default();
            h.update(&data[..n]);
            assert_eq!(h.finish(), checksum(&data[..n]), "len {n}");
        }
        // XXH3-64 with seed 0, as the reference implementation gives it.
        assert_eq!(checksum(b""), 0x2d06_8005_38d3_94c2);
        assert_ne!(checksum(b"a"), checksum(b"b"));
    }

    #[test]
    fn varints_round_trip_and_refuse_bad_input() {
        let values = [
            0u32,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            268_435_455,
            268_435_456,
            u32::MAX,
        ];
        let mut w = Writer::default();
        for &v in &values {
            let before = w.buf.len();
            w.varint(v);
            assert_eq!(w.buf.len() - before, varint_len(v), "{v}");
        }
        let mut r = Varints::new(&w.buf);
        for &v in &values {
            assert_eq!(r.next().unwrap(), v);
        }
        assert!(r.is_done());
        assert!(r.next().is_err());
        // In bulk: one-, two- and three-byte values mixed, at every offset, equal to reading one
        // at a time; too few bytes is an error.
        let mut wm = Writer::default();
        let many: Vec<u32> = (0..1000u32)
            .map(|i| match i % 37 {
                0 => i * 977,
                1 => 128 + i,
                _ => i % 128,
            })
            .collect();
        many.iter().for_each(|&v| wm.varint(v));
        for skip in 0..10 {
            let mut one = Varints::new(&wm.buf);
            for _ in 0..skip {
                one.next().unwrap();
            }
            let mut bulk = vec![0u32; many.len() - skip];
            one.read_into(&mut bulk).unwrap();
            assert_eq!(bulk, many[skip..]);
            assert!(one.is_done());
        }
        let mut short = vec![0u32; many.len() + 1];
        assert!(Varints::new(&wm.buf).read_into(&mut short).is_err());
        assert_eq!(w.buf[..2], [0, 1]);
        // Truncated, too long, above u32::MAX.
        assert!(Varints::new(&[0x80]).next().is_err());
        assert!(Varints::new(&[0x80; 6]).next().is_err());
        assert!(Varints::new(&[0xff, 0xff, 0xff, 0xff, 0x10])
            .next()
            .is_err());
        assert_eq!(
            Varints::new(&[0xff, 0xff, 0xff, 0xff, 0x0f])
                .next()
                .unwrap(),
            u32::MAX
        );
    }

    #[test]
    fn round_trip_and_bounds() {
        let mut w = Writer::default();
        w.u8(7);
        w.u32(0xdead_beef);
        w.u64(u64::MAX - 1);
        w.f32(-1.5);
        w.str("明月");
        w.u32s(&[1, 2, 3]);
        w.f32s(&[0.25, f32::NAN]);
        let mut r = Reader::new(&w.buf);
        assert_eq!(r.u8().unwrap(), 7);
        assert_eq!(r.u32().unwrap(), 0xdead_beef);
        assert_eq!(r.u64().unwrap(), u64::MAX - 1);
        assert_eq!(r.f32().unwrap(), -1.5);
        assert_eq!(r.str().unwrap(), "明月");
        assert_eq!(r.u32s().unwrap(), [1, 2, 3]);
        let f = r.f32s().unwrap();
        assert_eq!(f[0], 0.25);
        assert!(f[1].is_nan());
        r.finish().unwrap();
        assert!(r.u8().is_err());
    }

    #[test]
    fn huge_counts_are_refused_before_allocating() {
        let mut w = Writer::default();
        w.u32(u32::MAX);
        assert!(Reader::new(&w.buf).u32s().is_err());
        assert!(Reader::new(&w.buf).bytes().is_err());
    }

    #[test]
    fn hash_differs_by_content_and_length() {
        assert_ne!(hash64(b""), hash64(b"\0"));
        assert_ne!(hash64(b"abc"), hash64(b"abd"));
        assert_ne!(hash64(b"12345678a"), hash64(b"12345678b"));
    }
}
