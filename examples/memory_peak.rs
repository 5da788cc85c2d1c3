//! Native probe of the heap high-water mark of the batch builds the browser benchmark measures
//! as wasm linear memory (BENCHMARKS.md, "Memory"): `SearchIndex::upsert_many` over T1-like
//! synthetic Zipf pages, and `VectorStore::put` of 384-d rows. Run:
//! `cargo run --release --example memory_peak [-- PAGES ROWS]` (defaults 10000 10000).
//!
//! Two ways to build: every page held at once (`SearchIndex::upsert_many`), and pages in batches
//! of `REBUILD_BATCH`, two passes (`SearchIndex::builder`, what a wiki with no stored index
//! does and what the browser benchmark measures).
//!
//! A counting global allocator reports, per step, the live heap before it, the peak during it and
//! the live heap after it (MB = 10⁶ bytes), and its wall time. Wasm linear memory never shrinks, so the browser's
//! figure is at least the peak of its build (plus allocator fragmentation, which this does not
//! see); the input the caller holds during the build is counted in "before".

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use llm_wiki::search::bm25::DocFields;
use llm_wiki::search::vectors::{HnswParams, VectorStore};
use llm_wiki::search::{SearchConfig, SearchIndex};
use llm_wiki::search_ops::REBUILD_BATCH;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        System.dealloc(p, l);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                // A moving realloc holds both blocks for the copy.
                PEAK.fetch_max(now + l.size().min(new), Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mb(b: usize) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// Runs `f`, printing live-before, peak-during and live-after.
fn step<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let t = std::time::Instant::now();
    let out = f();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let peak = PEAK.load(Ordering::Relaxed);
    let after = LIVE.load(Ordering::Relaxed);
    println!(
        "{name:<40} before {:>9}  peak {:>9} (+{:>9})  after {:>9}  {ms:>8.1} ms",
        mb(before),
        mb(peak),
        mb(peak - before),
        mb(after)
    );
    out
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn zipf(&mut self, n: usize) -> usize {
        let h = (n as f64).ln() + 0.5772;
        ((self.unit() * h - 0.5772).exp() as usize).min(n - 1)
    }
}

fn word(r: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "to", "ri", "mu", "se", "na", "lo", "pe", "di", "ga", "vo", "zu", "be", "xi", "ho",
        "ne",
    ];
    let mut s = String::new();
    let mut x = r + 1;
    while x > 0 {
        s.push_str(SYL[x % 16]);
        x /= 16;
    }
    s
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let pages = args.first().copied().unwrap_or(10_000);
    let rows = args.get(1).copied().unwrap_or(10_000);

    // T1-like: 20k-word vocabulary, Zipf s = 1, titles of 3 words, bodies of 150–449 words;
    // page i is generated from its own seed, so a batch can be generated again for a second pass.
    let page = |i: usize| {
        let mut rng = Rng(42 ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let title = (0..3)
            .map(|_| word(rng.zipf(20_000)))
            .collect::<Vec<_>>()
            .join(" ");
        let len = 150 + (rng.next() as usize % 300);
        let body = (0..len)
            .map(|_| word(rng.zipf(20_000)))
            .collect::<Vec<_>>()
            .join(" ");
        (format!("t1-{i}"), title, body)
    };

    // A first save, as the IndexedDB backend does it: each record handed over in pieces (into
    // JS memory, which this probe does not count); the `bm25` base is written from a snapshot.
    let save = |index: &SearchIndex| {
        let mut n = 0usize;
        for r in index.dirty_records() {
            if let Some(d) = r.data {
                d.write_to(&mut |piece| n += piece.len());
            }
        }
        n
    };

    println!("-- every page held at once, SearchIndex::upsert_many");
    let docs: Vec<(String, String, String)> = step("generate pages (the caller's input)", || {
        (0..pages).map(page).collect()
    });
    let index = step("SearchIndex::upsert_many", || {
        let mut idx = SearchIndex::default();
        idx.upsert_many(docs.iter().map(|(k, t, b)| {
            (
                k.as_str(),
                DocFields {
                    title: t,
                    aliases: &[],
                    body: b,
                },
            )
        }));
        idx
    });
    let written = step("first save (dirty_records, written out)", || save(&index));
    println!("first save wrote {}", mb(written));
    drop(docs);
    drop(index);

    println!(
        "-- pages in batches of {REBUILD_BATCH}, two passes (SearchIndex::builder), as a wiki \
         with no stored index builds one"
    );
    let index = step("IndexBuilder (count, fill, finish)", || {
        let mut b = SearchIndex::builder(SearchConfig::default());
        for fill in [false, true] {
            for start in (0..pages).step_by(REBUILD_BATCH) {
                let batch: Vec<_> = (start..(start + REBUILD_BATCH).min(pages))
                    .map(page)
                    .collect();
                for (k, t, body) in &batch {
                    let f = DocFields {
                        title: t,
                        aliases: &[],
                        body,
                    };
                    if fill {
                        b.fill(k, &f).unwrap();
                    } else {
                        b.count(k, &f).unwrap();
                    }
                }
            }
        }
        b.finish().unwrap()
    });
    let written = step("first save (dirty_records, written out)", || save(&index));
    println!("first save wrote {}", mb(written));
    drop(index);

    let mut rng = Rng(42);
    let dim = 384;
    let input: Vec<f32> = step("generate vectors (the caller's input)", || {
        (0..rows * dim)
            .map(|_| (rng.unit() * 2.0 - 1.0) as f32)
            .collect()
    });
    let store = step("VectorStore::put × rows", || {
        let mut s = VectorStore::new("probe", dim, HnswParams::default());
        for (i, row) in input.chunks_exact(dim).enumerate() {
            s.put(i as u32, row).unwrap();
        }
        s
    });
    println!(
        "vector store heap_bytes {}, rows × dim × 4 = {}",
        mb(store.heap_bytes()),
        mb(rows * dim * 4)
    );
    drop(store);

    // The same rows as a search index's embeddings, then its first save: the `vectors` record is
    // written in pieces from a snapshot of the rows.
    let keys: Vec<String> = (0..rows).map(|i| format!("v{i}")).collect();
    let mut index = SearchIndex::default();
    index.upsert_many(keys.iter().map(|k| {
        (
            k.as_str(),
            DocFields {
                title: k,
                aliases: &[],
                body: "",
            },
        )
    }));
    let items: Vec<(&str, &[f32])> = keys
        .iter()
        .zip(input.chunks_exact(dim))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    step("SearchIndex::put_embeddings × rows", || {
        index.put_embeddings("probe", &items).unwrap()
    });
    let written = step("first save with vectors (written out)", || save(&index));
    println!("first save wrote {}", mb(written));
}
