//! Rule 4 of [`super`], recurring CJK terms: the n-gram statistics of a source (counts and
//! accessors) and the corpus's boundary, nesting and topic tests over them.

use std::collections::{BTreeMap, BTreeSet};

use super::{is_rare, CorpusStats};
use crate::extractive::stopwords::{
    has_cjk_function_edge, is_cjk_function, is_cjk_numeral, is_cjk_stop,
};
use crate::text::is_cjk;

/// What borders one occurrence of a CJK n-gram on one side: its accessor (Feng et al. 2004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Accessor {
    /// A word boundary: no letter (punctuation, space, Latin, the edge of the run) or a function
    /// character ([`crate::extractive::stopwords::CJK_FUNCTION`]) not bound to the n-gram.
    Open,
    /// On the left only: a numeral or determiner
    /// ([`crate::extractive::stopwords::CJK_NUMERALS`]) or a digit, a count, so the n-gram starts
    /// with a classifier (九万**张卡片**, 240 **份文件**).
    Numeral,
    /// A letter, or a function character bound to the n-gram: it takes at least half of that
    /// character's occurrences in the source (之 of 祖沖之 yes, 的 of 卢曼的 no).
    Char(char),
}

/// A CJK n-gram that one source repeats: its count there, its accessors, how many of them cut a
/// pair of characters found elsewhere in the source, and whether a heading of the source
/// contains it (rule 4).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recurring {
    pub(super) count: usize,
    pub(super) left: BTreeMap<Accessor, usize>,
    pub(super) right: BTreeMap<Accessor, usize>,
    pub(super) left_cut: usize,
    pub(super) right_cut: usize,
    pub(super) headed: bool,
}

/// How one side of a CJK n-gram is bordered across the sources it recurs in (rule 4).
#[derive(Debug, PartialEq)]
enum Border {
    /// Its accessors vary or include word boundaries.
    Boundary,
    /// One accessor takes three quarters or more of its occurrences.
    ClosedBy(Accessor),
    /// No occurrence has a word boundary there, and at least half of them cut a pair of
    /// characters that occurs elsewhere in the source (活字印|刷: 印刷).
    Cut,
}

/// The CJK runs of `text` (letters only), each with whether a digit precedes it (spaces skipped).
fn cjk_runs(text: &str) -> Vec<(Vec<char>, bool)> {
    let mut out = Vec::new();
    let mut run: Vec<char> = Vec::new();
    let mut last: Option<char> = None;
    let mut digit_before = false;
    for c in text.chars().chain(std::iter::once(' ')) {
        if is_cjk(c) && c.is_alphanumeric() {
            if run.is_empty() {
                digit_before = last.is_some_and(|l| l.is_ascii_digit());
            }
            run.push(c);
        } else if !run.is_empty() {
            out.push((std::mem::take(&mut run), digit_before));
        }
        if !c.is_whitespace() {
            last = Some(c);
        }
    }
    out
}

/// The CJK 2–4-grams of `text` (runs of CJK letters, each window counted) with their counts, and
/// those it repeats (three times or more) with their accessors and whether one of `headings`
/// contains them. Linear in the text: each window is visited twice.
pub(super) fn cjk_stats(
    text: &str,
    headings: &[&str],
) -> (BTreeMap<String, usize>, BTreeMap<String, Recurring>) {
    let runs = cjk_runs(text);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut function: BTreeMap<char, usize> = BTreeMap::new();
    for (run, _) in &runs {
        for &c in run {
            if is_cjk_function(c) {
                *function.entry(c).or_default() += 1;
            }
        }
        for n in 2..=4 {
            for w in run.windows(n) {
                *counts.entry(w.iter().collect()).or_default() += 1;
            }
        }
    }
    let mut recurring: BTreeMap<String, Recurring> = BTreeMap::new();
    for (run, digit_before) in &runs {
        for n in 2..=4.min(run.len()) {
            for i in 0..=run.len() - n {
                let gram: String = run[i..i + n].iter().collect();
                let count = counts.get(&gram).copied().unwrap_or(0);
                if count < 3 {
                    continue;
                }
                let left = match i.checked_sub(1).map(|j| run[j]) {
                    Some(c) if is_cjk_numeral(c) => Accessor::Numeral,
                    Some(c) => Accessor::Char(c),
                    None if *digit_before => Accessor::Numeral,
                    None => Accessor::Open,
                };
                let right = run
                    .get(i + n)
                    .map_or(Accessor::Open, |&c| Accessor::Char(c));
                let r = recurring.entry(gram).or_insert_with_key(|g| Recurring {
                    count,
                    headed: headings.iter().any(|h| h.contains(g.as_str())),
                    ..Recurring::default()
                });
                *r.left.entry(left).or_default() += 1;
                *r.right.entry(right).or_default() += 1;
            }
        }
    }
    // The accessors that cut a pair found elsewhere (印刷 beyond 活字印刷): the pair of the
    // n-gram's edge character and the accessor occurs more often than the two together.
    let pair_count = |a: char, b: char| counts.get(&String::from_iter([a, b])).copied();
    for (gram, r) in recurring.iter_mut() {
        let (first, last) = (gram.chars().next(), gram.chars().last());
        for (acc, &n) in &r.left {
            if let (Accessor::Char(c), Some(f)) = (acc, first) {
                if pair_count(*c, f).is_some_and(|p| p > n) {
                    r.left_cut += n;
                }
            }
        }
        for (acc, &n) in &r.right {
            if let (Accessor::Char(c), Some(l)) = (acc, last) {
                if pair_count(l, *c).is_some_and(|p| p > n) {
                    r.right_cut += n;
                }
            }
        }
    }
    // A function character is a word boundary unless bound to the n-gram.
    for r in recurring.values_mut() {
        for side in [&mut r.left, &mut r.right] {
            let unbound: Vec<(Accessor, usize)> = side
                .iter()
                .filter(|(a, &n)| match a {
                    Accessor::Char(c) if is_cjk_function(*c) => {
                        2 * n < function.get(c).copied().unwrap_or(0)
                    }
                    _ => false,
                })
                .map(|(a, n)| (*a, *n))
                .collect();
            for (a, n) in unbound {
                side.remove(&a);
                *side.entry(Accessor::Open).or_default() += n;
            }
        }
    }
    (counts, recurring)
}

/// Most CJK terms a corpus gets from rule 4.
const MAX_CJK_TERMS: usize = 50;

impl CorpusStats {
    /// How side `left` (else right) of `gram` is bordered across the sources it recurs in.
    fn border(&self, gram: &str, left: bool) -> Border {
        let (map, cuts) = if left {
            (&self.cjk_left, &self.cjk_left_cut)
        } else {
            (&self.cjk_right, &self.cjk_right_cut)
        };
        let Some(acc) = map.get(gram) else {
            return Border::Boundary;
        };
        let total: usize = acc.values().sum();
        let closed = acc
            .iter()
            .filter(|(a, _)| **a != Accessor::Open)
            .max_by(|x, y| x.1.cmp(y.1).then_with(|| y.0.cmp(x.0)));
        if let Some((a, &n)) = closed {
            if 4 * n >= 3 * total {
                return Border::ClosedBy(*a);
            }
        }
        let cut = cuts.get(gram).copied().unwrap_or(0);
        if !acc.contains_key(&Accessor::Open) && 2 * cut >= total {
            return Border::Cut;
        }
        Border::Boundary
    }

    /// Whether a CJK n-gram with a function character at an edge is a word all the same: the
    /// rest is closed by that character, bound to it (祖沖 + 之, 江堰 after 都).
    fn bound_edge(&self, gram: &str) -> bool {
        let chars: Vec<char> = gram.chars().collect();
        let n = chars.len();
        let side_ok = |f: char, rest: &[char], left: bool| {
            rest.len() >= 2
                && self.border(&rest.iter().collect::<String>(), left)
                    == Border::ClosedBy(Accessor::Char(f))
        };
        let first_ok = !is_cjk_function(chars[0]) || side_ok(chars[0], &chars[1..], true);
        let last_ok =
            !is_cjk_function(chars[n - 1]) || side_ok(chars[n - 1], &chars[..n - 1], false);
        first_ok && last_ok
    }

    /// Rule 4: the recurring CJK terms with their counts, by C-value, best first.
    pub(super) fn recurring_cjk(&self) -> Vec<(String, usize)> {
        let df = |t: &str| self.cjk_df.get(t).copied().unwrap_or(0);
        let candidates: BTreeMap<&str, usize> = self
            .cjk
            .iter()
            .filter(|(t, &c)| {
                c >= 3
                    && self.cjk_recur.contains_key(*t)
                    && is_rare(df(t), self.docs)
                    && !t.starts_with(is_cjk_numeral)
                    && !is_cjk_stop(t)
                    && (!has_cjk_function_edge(t) || self.bound_edge(t))
            })
            .map(|(t, c)| (t.as_str(), *c))
            .collect();
        // Per candidate, the longer candidates that contain it: their count, sum and largest.
        let mut longer: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
        for (b, &fb) in &candidates {
            let chars: Vec<char> = b.chars().collect();
            let mut inner = BTreeSet::new();
            for n in 2..chars.len() {
                for w in chars.windows(n) {
                    inner.insert(w.iter().collect::<String>());
                }
            }
            for a in inner {
                let e = longer.entry(a).or_default();
                *e = (e.0 + 1, e.1 + fb, e.2.max(fb));
            }
        }
        let mut kept: Vec<(String, usize, f64)> = Vec::new();
        for (t, &f) in &candidates {
            if self.border(t, true) != Border::Boundary || self.border(t, false) != Border::Boundary
            {
                continue;
            }
            let (nested_in, nested_sum, nested_max) = longer.get(*t).copied().unwrap_or_default();
            if nested_max * 5 >= f * 4 {
                continue;
            }
            let nested_mean = if nested_in > 0 {
                nested_sum as f64 / nested_in as f64
            } else {
                0.0
            };
            let c_value = (t.chars().count() as f64).log2() * (f as f64 - nested_mean);
            let most_in_one = self
                .cjk_recur
                .get(*t)
                .and_then(|m| m.keys().next_back())
                .copied()
                .unwrap_or(0);
            if self.cjk_headed.contains_key(*t) || 5 * most_in_one >= 4 * f {
                kept.push((t.to_string(), f, c_value));
            }
        }
        crate::util::sort_by(&mut kept, &|a, b| {
            b.2.total_cmp(&a.2)
                .then_with(|| b.1.cmp(&a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        kept.truncate(MAX_CJK_TERMS);
        kept.into_iter().map(|(t, c, _)| (t, c)).collect()
    }
}
