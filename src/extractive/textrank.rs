//! TextRank sentence ranking (Mihalcea & Tarau, "TextRank: Bringing Order into Texts", EMNLP 2004).
//!
//! Sentences are graph nodes; an edge's weight is their content overlap normalised by length,
//! `|Si ∩ Sj| / (ln|Si| + ln|Sj|)` (the paper's similarity); scores are weighted PageRank with
//! damping 0.85, iterated until the largest change is below 1e-6 or 100 rounds. Tokens are
//! lowercase words without stopwords for alphabetic scripts and character bigrams for CJK.

use std::collections::HashSet;

use crate::text::is_cjk;

use super::stopwords::STOPWORDS;

/// Topic tokens of a sentence.
pub fn tokens(sentence: &str) -> HashSet<String> {
    let s = crate::text::nfkc_lowercase(sentence);
    let mut out = HashSet::new();
    let mut word = String::new();
    let mut cjk_prev: Option<char> = None;
    for c in s.chars() {
        if is_cjk(c) && c.is_alphanumeric() {
            if !word.is_empty() {
                push_word(&mut out, &std::mem::take(&mut word));
            }
            if let Some(p) = cjk_prev {
                out.insert(format!("{p}{c}"));
            }
            cjk_prev = Some(c);
        } else {
            cjk_prev = None;
            if c.is_alphanumeric() {
                word.push(c);
            } else if !word.is_empty() {
                push_word(&mut out, &std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        push_word(&mut out, &word);
    }
    out
}

fn push_word(out: &mut HashSet<String>, w: &str) {
    if w.chars().count() > 1 && !STOPWORDS.contains(&w) && !w.chars().all(|c| c.is_ascii_digit()) {
        out.insert(w.to_string());
    }
}

/// TextRank scores of `sentences`, one per sentence, summing to about 1 (uniform when no two
/// sentences share a token).
pub fn rank(sentences: &[String]) -> Vec<f64> {
    let n = sentences.len();
    if n == 0 {
        return Vec::new();
    }
    let toks: Vec<HashSet<String>> = sentences.iter().map(|s| tokens(s)).collect();
    let mut weights = vec![Vec::<(usize, f64)>::new(); n];
    for i in 0..n {
        for j in (i + 1)..n {
            let (a, b) = (&toks[i], &toks[j]);
            if a.len() < 2 || b.len() < 2 {
                continue;
            }
            let overlap = a.intersection(b).count();
            if overlap == 0 {
                continue;
            }
            let w = overlap as f64 / ((a.len() as f64).ln() + (b.len() as f64).ln());
            weights[i].push((j, w));
            weights[j].push((i, w));
        }
    }
    let out_sum: Vec<f64> = weights
        .iter()
        .map(|e| e.iter().map(|(_, w)| w).sum())
        .collect();
    let d = 0.85;
    let mut score = vec![1.0 / n as f64; n];
    for _ in 0..100 {
        let mut next = vec![(1.0 - d) / n as f64; n];
        for i in 0..n {
            for &(j, w) in &weights[i] {
                if out_sum[j] > 0.0 {
                    next[i] += d * w / out_sum[j] * score[j];
                }
            }
        }
        // Dangling nodes (no edges) spread their score evenly.
        let dangling: f64 = (0..n)
            .filter(|&j| out_sum[j] == 0.0)
            .map(|j| score[j])
            .sum();
        for v in next.iter_mut() {
            *v += d * dangling / n as f64;
        }
        let delta = next
            .iter()
            .zip(&score)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        score = next;
        if delta < 1e-6 {
            break;
        }
    }
    score
}

/// Indices of the `k` best sentences by [`rank`], ties broken by position, returned in document
/// order.
pub fn top_sentences(sentences: &[String], k: usize) -> Vec<usize> {
    let scores = rank(sentences);
    let mut idx: Vec<usize> = (0..sentences.len()).collect();
    crate::util::sort_by(&mut idx, &|&a, &b| {
        scores[b].total_cmp(&scores[a]).then(a.cmp(&b))
    });
    // A sentence the text repeats (the same words in another section) is chosen once.
    let mut seen = std::collections::HashSet::new();
    idx.retain(|&i| {
        seen.insert(crate::markdown::dedup::dup_key(
            crate::markdown::blocks::BlockKind::Paragraph,
            &sentences[i],
        ))
    });
    idx.truncate(k);
    crate::util::sort(&mut idx);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn central_sentences_rank_first() {
        let s: Vec<String> = [
            "Ownership is a set of rules that govern how Rust manages memory.",
            "The weather was nice yesterday.",
            "Rust checks ownership rules at compile time.",
            "Memory is managed through ownership in Rust.",
            "Bananas are yellow.",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let scores = rank(&s);
        assert!((scores.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        assert!(scores[0] > scores[1] && scores[2] > scores[4] && scores[3] > scores[1]);
        assert_eq!(top_sentences(&s, 2).len(), 2);
        assert!(!top_sentences(&s, 3).contains(&1));
    }

    #[test]
    fn a_repeated_sentence_is_chosen_once() {
        let s: Vec<String> = [
            "The echo server returns every line it receives.",
            "It listens on port 7.",
            "The echo server returns every line it receives.",
            "the echo  server returns every line it receives.",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let top = top_sentences(&s, 3);
        assert_eq!(top, vec![0, 1], "{top:?}");
    }

    #[test]
    fn cjk_uses_bigrams_and_degenerate_inputs_are_defined() {
        let s: Vec<String> = [
            "流量控制让生产者等待。",
            "背压是一种流量控制机制。",
            "今天天气很好。",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let scores = rank(&s);
        assert!(scores[0] > scores[2] && scores[1] > scores[2]);
        assert!(rank(&[]).is_empty());
        assert_eq!(rank(&["x".to_string()]), vec![1.0]);
        assert!(tokens("The and of").is_empty());
    }
}
