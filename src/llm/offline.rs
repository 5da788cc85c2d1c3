//! The built-in offline embedding: hashed word and character n-gram vectors (`offline-hash-v1`).
//!
//! Method: feature hashing ("the hashing trick", Weinberger, Dasgupta, Langford, Smola and
//! Attenberg, *Feature Hashing for Large Scale Multitask Learning*, ICML 2009): every feature is
//! hashed to one of `dimension` buckets with a second, independent hash bit choosing its sign, so
//! collisions cancel out in expectation; the vector is then L2-normalised.
//!
//! Features, after NFKC and lowercasing (the search tokenizer's folding without its Traditional →
//! Simplified fold, Decision 13: the features of a model id never change, so vectors stored by
//! earlier builds keep matching queries; folding would be a new model id, and every stored offline
//! vector would have to be made again):
//! * runs of Han, kana and Hangul ([`crate::text::is_cjk`], CJK punctuation excluded): every
//!   character (weight 1) and every overlapping pair of characters (weight 1), so 机器学习 and
//!   学习 share features without a dictionary;
//! * other words (Unicode word boundaries, UAX #29): the word (weight 1), adjacent word pairs
//!   (weight 0.5), and character trigrams of `<word>` with boundary marks (weight 0.5), so
//!   `embedding` and `embeddings` stay close.
//!
//! The hash is 64-bit FNV-1a over a kind prefix and the feature's UTF-8 bytes: deterministic on
//! every platform and build (never std's randomised hasher), so vectors stored by one browser
//! match queries embedded by another. Changing anything here requires a new model id.

use unicode_segmentation::UnicodeSegmentation;

use crate::llm::{Cancel, Embedder, Embeddings};
use crate::model::TokenUsage;
use crate::text::is_cjk;

/// Model id of the built-in embedding. Vectors of different ids never mix.
pub const OFFLINE_MODEL: &str = "offline-hash-v1";

/// Dimension of `offline-hash-v1` vectors.
pub const OFFLINE_DIMENSION: usize = 256;

/// 64-bit FNV-1a (Fowler–Noll–Vo) of `parts` concatenated.
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Adds one feature to a vector: kind prefix, the feature's bytes in parts, weight.
type AddFeature<'a> = dyn FnMut(&[u8], &[&[u8]], f32) + 'a;

/// [`fnv1a64`] continued from the hash `h` of what came before over `parts`.
fn fnv1a64_after(mut h: u64, parts: &[&[u8]]) -> u64 {
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The hashed n-gram embedder. `Default` is `offline-hash-v1` (256 dimensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineEmbedder {
    model: String,
    dimension: usize,
}

impl Default for OfflineEmbedder {
    fn default() -> Self {
        OfflineEmbedder {
            model: OFFLINE_MODEL.into(),
            dimension: OFFLINE_DIMENSION,
        }
    }
}

/// True for CJK characters that are letters (not the CJK symbols and punctuation block).
fn is_cjk_letter(c: char) -> bool {
    is_cjk(c) && !matches!(c as u32, 0x3000..=0x303F | 0xFF65)
}

impl OfflineEmbedder {
    /// `offline-hash-v1`.
    pub fn new() -> Self {
        OfflineEmbedder::default()
    }

    /// The same method under another model id and dimension (the scripted test endpoint uses
    /// this to serve e.g. 768- and 1024-dimension models). `dimension` is at least 1.
    pub fn with_model(model: impl Into<String>, dimension: usize) -> Self {
        OfflineEmbedder {
            model: model.into(),
            dimension: dimension.max(1),
        }
    }

    /// The vector dimension.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Embeds one text: an L2-normalised vector of [`Self::dimension`] floats; all zeros for a
    /// text without any feature (empty, or only punctuation).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        // NFKC leaves ASCII as it is.
        let folded = crate::text::nfkc_lowercase(text);
        // A feature is its kind prefix and its bytes, given in parts (hashed as one string).
        let mut add = |kind: &[u8], feature: &[&[u8]], weight: f32| {
            let h = fnv1a64_after(fnv1a64(&[kind]), feature);
            let index = (h % self.dimension as u64) as usize;
            let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
            v[index] += sign * weight;
        };
        // Split into CJK runs and the rest.
        let mut rest = String::with_capacity(folded.len());
        let mut run: Vec<char> = Vec::new();
        let flush_run = |run: &mut Vec<char>, add: &mut AddFeature<'_>| {
            let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
            for (i, c) in run.iter().enumerate() {
                let c = c.encode_utf8(&mut a).as_bytes();
                add(b"u:", &[c], 1.0);
                if let Some(next) = run.get(i + 1) {
                    add(b"p:", &[c, next.encode_utf8(&mut b).as_bytes()], 1.0);
                }
            }
            run.clear();
        };
        for c in folded.chars() {
            if is_cjk_letter(c) {
                run.push(c);
                rest.push(' ');
            } else {
                if !run.is_empty() {
                    flush_run(&mut run, &mut add);
                }
                rest.push(c);
            }
        }
        if !run.is_empty() {
            flush_run(&mut run, &mut add);
        }
        let mut previous: Option<&str> = None;
        // `<word>` with boundary marks, and where each of its characters starts.
        let mut marked = String::new();
        let mut starts: Vec<usize> = Vec::new();
        for word in rest.unicode_words() {
            add(b"w:", &[word.as_bytes()], 1.0);
            if let Some(p) = previous {
                add(b"b:", &[p.as_bytes(), b" ", word.as_bytes()], 0.5);
            }
            previous = Some(word);
            marked.clear();
            marked.push('<');
            marked.push_str(word);
            marked.push('>');
            starts.clear();
            starts.extend(marked.char_indices().map(|(i, _)| i));
            starts.push(marked.len());
            // Every window of three characters.
            for i in 0..starts.len().saturating_sub(3) {
                add(b"c:", &[&marked.as_bytes()[starts[i]..starts[i + 3]]], 0.5);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for x in &mut v {
                *x /= norm;
            }
        }
        v
    }
}

impl Embedder for OfflineEmbedder {
    fn model(&self) -> String {
        self.model.clone()
    }

    /// Never fails except [`crate::Error::Cancelled`]; usage is zero (no endpoint).
    async fn embed(&self, texts: &[String], cancel: &Cancel) -> crate::Result<Embeddings> {
        cancel.check()?;
        Ok(Embeddings {
            model: self.model.clone(),
            dimension: self.dimension,
            vectors: texts.iter().map(|t| self.embed_one(t)).collect(),
            usage: TokenUsage::default(),
        })
    }
}

/// Cosine similarity of two vectors of the same length (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::UnicodeNormalization;

    #[test]
    fn fnv_known_vectors() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(fnv1a64(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(&[b"foo"]), 0xdcb2_7518_fed9_d577);
        assert_eq!(fnv1a64(&[b"fo", b"o"]), fnv1a64(&[b"foo"]));
    }

    #[test]
    fn normalised_and_deterministic() {
        let e = OfflineEmbedder::new();
        let v = e.embed_one("Tokio is an async runtime for Rust. 东京是日本的首都。");
        assert_eq!(v.len(), OFFLINE_DIMENSION);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        assert_eq!(
            v,
            e.embed_one("Tokio is an async runtime for Rust. 东京是日本的首都。")
        );
        assert!(e.embed_one("").iter().all(|x| *x == 0.0));
        assert!(e.embed_one(" 。，!! ").iter().all(|x| *x == 0.0));
        // Fixed values pin the method: a change to hashing or features must change the model id.
        // (tests/web_llm.rs checks the same values in the browser: same vectors on every platform.)
        let nonzero = |t: &str| -> Vec<(usize, f32)> {
            e.embed_one(t)
                .into_iter()
                .enumerate()
                .filter(|(_, x)| *x != 0.0)
                .collect()
        };
        let k = 1.0 / 7f32.sqrt();
        assert_eq!(
            nonzero("机器学习"),
            [
                (0, -k),
                (5, -k),
                (38, -k),
                (79, -k),
                (114, k),
                (145, k),
                (146, k)
            ],
            "4 unigrams + 3 bigrams"
        );
        let tokio = nonzero("Tokio runtime");
        assert_eq!(tokio.len(), 13);
        assert_eq!(&tokio[..3], &[(24, -0.4), (46, -0.2), (73, 0.2)]);
    }

    /// The embedding as first written (one allocation per feature): the faster [`OfflineEmbedder::embed_one`]
    /// must give the same vectors to the last bit, or `offline-hash-v1` would change under stored vectors.
    fn reference_embed(dimension: usize, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; dimension];
        let folded: String = text.nfkc().flat_map(char::to_lowercase).collect();
        let mut add = |kind: &[u8], feature: &str, weight: f32| {
            let h = fnv1a64(&[kind, feature.as_bytes()]);
            let index = (h % dimension as u64) as usize;
            let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
            v[index] += sign * weight;
        };
        // Split into CJK runs and the rest.
        let mut rest = String::new();
        let mut run: Vec<char> = Vec::new();
        let flush_run = |run: &mut Vec<char>, add: &mut dyn FnMut(&[u8], &str, f32)| {
            let mut buf = [0u8; 8];
            for (i, c) in run.iter().enumerate() {
                add(b"u:", c.encode_utf8(&mut buf), 1.0);
                if let Some(next) = run.get(i + 1) {
                    let pair: String = [*c, *next].iter().collect();
                    add(b"p:", &pair, 1.0);
                }
            }
            run.clear();
        };
        for c in folded.chars() {
            if is_cjk_letter(c) {
                run.push(c);
                rest.push(' ');
            } else {
                if !run.is_empty() {
                    flush_run(&mut run, &mut add);
                }
                rest.push(c);
            }
        }
        if !run.is_empty() {
            flush_run(&mut run, &mut add);
        }
        let mut previous: Option<&str> = None;
        for word in rest.unicode_words() {
            add(b"w:", word, 1.0);
            if let Some(p) = previous {
                add(b"b:", &format!("{p} {word}"), 0.5);
            }
            previous = Some(word);
            let marked: Vec<char> = std::iter::once('<')
                .chain(word.chars())
                .chain(std::iter::once('>'))
                .collect();
            for tri in marked.windows(3) {
                let t: String = tri.iter().collect();
                add(b"c:", &t, 0.5);
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            for x in &mut v {
                *x /= norm;
            }
        }
        v
    }

    #[test]
    fn same_vectors_as_the_reference_method() {
        let e = OfflineEmbedder::new();
        let texts = [
            "",
            "Tokio is an async runtime for Rust. 东京是日本的首都。",
            "ＲＵＳＴ and Ｃ＋＋ — full-width forms; ﬁ ligatures; Å (A + combining ring)",
            "机器学习 (machine learning) 和深度学习；ひらがなとカタカナ；한국어 문장",
            "fn main() { println!(\"hello, world\"); } // `cargo run` 🦀 emoji x",
            "a b c aa bb cc — one- and two-letter words, I/O, C#, .NET, 3.1 kg",
            "İstanbul ΣΊΣΥΦΟΣ straße ǅ — case folding that changes length",
        ];
        for t in texts {
            assert_eq!(
                e.embed_one(t),
                reference_embed(OFFLINE_DIMENSION, t),
                "{t:?}"
            );
        }
        let long: String = texts
            .iter()
            .cycle()
            .take(200)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            e.embed_one(&long),
            reference_embed(OFFLINE_DIMENSION, &long)
        );
    }

    #[test]
    fn similar_texts_are_closer() {
        let e = OfflineEmbedder::new();
        let q = e.embed_one("机器学习");
        let near = e.embed_one("监督学习是机器学习的一种方法");
        let far = e.embed_one("低头思故乡");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.2);
        let q = e.embed_one("embedding vectors");
        let near = e.embed_one("Embeddings turn text into vectors");
        let far = e.embed_one("the weather in Lisbon");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.2);
        // NFKC + case folding: full-width and upper-case forms embed like their plain forms.
        assert_eq!(e.embed_one("ＲＵＳＴ"), e.embed_one("rust"));
    }
}
