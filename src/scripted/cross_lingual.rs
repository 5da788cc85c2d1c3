//! The scripted endpoint's cross-lingual embedding models (issue 23, item 5): a model whose id
//! holds `xling` (e.g. `scripted-xling-64`, dimension after the last `-` as for every scripted
//! model) embeds a text as a multilingual model does, for a small fixed vocabulary only: an
//! English phrase of [`VOCABULARY`] and its Chinese forms (Simplified and Traditional) give the
//! same concept feature, so an English question and a Chinese passage on the same named thing get
//! close vectors though they share no character.
//!
//! A vector is `0.8·c + 0.6·h`, L2-normalised, where `c` is the unit vector of the text's concepts
//! (one hashed feature per concept, weighted by its occurrences) and `h` the unit vector of the
//! offline hashed n-gram method ([`OfflineEmbedder::embed_one`]). A text with no concept of the
//! vocabulary gets `h` alone, the same vector as a plain scripted model of that dimension; every
//! other model id gets `h` alone too.

use unicode_segmentation::UnicodeSegmentation;

use crate::llm::offline::{fnv1a64, OfflineEmbedder};

/// English phrase (lower case, words separated by one space) → its Chinese forms. Fixed: the test
/// of cross-lingual routing (`tests/cross_lingual_native.rs`) asks about these.
pub const VOCABULARY: &[(&str, &[&str])] = &[
    ("movable type", &["活字"]),
    ("printing", &["印刷"]),
    ("woodblock", &["雕版"]),
    ("bi sheng", &["毕昇", "畢昇"]),
    ("shen kuo", &["沈括"]),
    ("clay", &["胶泥", "膠泥"]),
    ("zu chongzhi", &["祖冲之", "祖沖之"]),
    ("pi", &["圆周率", "圓周率"]),
    ("calendar", &["历法", "曆法"]),
    ("mathematician", &["数学家", "數學家"]),
    ("astronomer", &["天文学家", "天文學家"]),
    ("fraction", &["分数", "分數"]),
];

/// Whether `model` is a cross-lingual scripted model (its id holds `xling`).
pub fn is_cross_lingual(model: &str) -> bool {
    model.contains("xling")
}

/// The vector the scripted endpoint returns for `text` under `model` of `dimension` floats (see
/// the module docs): L2-normalised, all zeros only for a text without any feature.
pub fn scripted_vector(model: &str, dimension: usize, text: &str) -> Vec<f32> {
    let hashed = OfflineEmbedder::with_model(model, dimension).embed_one(text);
    if !is_cross_lingual(model) {
        return hashed;
    }
    let counts = concepts(text);
    if counts.iter().all(|&n| n == 0) {
        return hashed;
    }
    let dimension = hashed.len();
    let mut c = vec![0f32; dimension];
    for (i, &n) in counts.iter().enumerate() {
        if n > 0 {
            let h = fnv1a64(&[b"x:".as_slice(), VOCABULARY[i].0.as_bytes()]);
            let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
            c[(h % dimension as u64) as usize] += sign * n as f32;
        }
    }
    let unit = |v: &mut Vec<f32>| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
    };
    unit(&mut c);
    let mut v: Vec<f32> = c
        .iter()
        .zip(&hashed)
        .map(|(c, h)| 0.8 * c + 0.6 * h)
        .collect();
    unit(&mut v);
    v
}

/// Occurrences of each [`VOCABULARY`] concept in `text`, in vocabulary order: its English phrase
/// as whole words (case-folded), plus its Chinese forms as substrings.
fn concepts(text: &str) -> Vec<usize> {
    let folded = crate::text::nfkc_lowercase(text);
    let words: Vec<&str> = folded.unicode_words().collect();
    VOCABULARY
        .iter()
        .map(|(english, forms)| {
            let phrase: Vec<&str> = english.split(' ').collect();
            let in_english = words
                .windows(phrase.len())
                .filter(|w| *w == phrase.as_slice())
                .count();
            let in_chinese: usize = forms.iter().map(|f| folded.matches(f).count()).sum();
            in_english + in_chinese
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::offline::cosine;

    #[test]
    fn an_english_phrase_and_its_chinese_forms_are_close_only_under_a_cross_lingual_model() {
        let en = "Who invented movable type printing with clay?";
        let zh = "北宋庆历年间，一位名叫毕昇的平民发明了胶泥活字，活字印刷由此开始。";
        let tw = "祖沖之最有名的成就是把圓周率精確到小數點後第七位。";
        let x = |t: &str| scripted_vector("scripted-xling-256", 256, t);
        let plain = |t: &str| scripted_vector("scripted-embed-256", 256, t);
        assert!(cosine(&x(en), &x(zh)) > 0.4, "{}", cosine(&x(en), &x(zh)));
        assert!(cosine(&x(en), &x(tw)) < 0.2);
        assert!(cosine(&plain(en), &plain(zh)).abs() < 0.2);
        // A text without a concept is embedded as by the plain scripted model.
        let none = "Cargo downloads your dependencies.";
        assert_eq!(x(none), plain(none));
        assert_eq!(x(en).len(), 256);
        // Whole words only: "pin" and "epic" are not "pi".
        assert_eq!(concepts("a pin in an epic")[7], 0);
        assert_eq!(concepts("What is pi? 圓周率")[7], 2);
    }
}
