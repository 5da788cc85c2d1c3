//! Terms the offline compiler makes pages for, found across all sources of a wiki.
//!
//! A term gets a page only if it names something: it is a heading term, or it recurs in a source
//! and is rare across the corpus (document frequency at most half the sources, rounded up: an
//! inverse document frequency ln(N/df) of about ln 2 or more, the IDF of TF-IDF; Spärck Jones
//! 1972). Words of the one stop list ([`super::stopwords`]) never make a term. A CJK n-gram must
//! also be a whole word by its neighbours, and be in a heading or concentrated in one source
//! (rule 4).
//!
//! Rules (the acceptance tests derive their expected keys from these):
//! 1. **Heading terms.** Each Latin-script heading is split into words (surrounding punctuation
//!    removed); a leading `-ing` verb is dropped ("Creating a New Vector" → "a New Vector"); the rest
//!    is cut at stopwords into segments; every word and every two-word run of a segment is a
//!    candidate, except generic words ([`GENERIC`]). A candidate is a term when it occurs in two or
//!    more headings of the corpus, or when it is in one of a source's headings and occurs three or
//!    more times in that source's text; and when it is distinctive: a candidate ending in a
//!    participle or adverb ([`is_modifier`]) never is (except a gerund of a source's first
//!    heading, "Borrowing"); a candidate of a source's first heading or a two-word one is; a
//!    single word only when rare across the corpus's running text (threshold above: "code" or
//!    "data" in every chapter of a book names nothing) or when it heads a section in at least
//!    half the sources whose text has it (the subject of a wiki on one topic). A CJK heading (without punctuation, 2–8
//!    characters) is a candidate as a whole, under the same two conditions, unless it is a stop
//!    word or made of stop words ([`is_cjk_stop`]).
//! 2. Words match case-insensitively and singular/plural-insensitively ([`singular`]); a one-word
//!    term that only ever occurs inside a two-word term ("Hash" in "Hash Map") is dropped.
//! 3. **Capitalised multi-word terms**: runs of two to four capitalised words in running text
//!    (leading stopwords removed) that occur at least twice in the corpus are entities.
//! 4. **Recurring CJK terms** (no segmenter: the n-grams of the running text). A candidate is a
//!    CJK character run of 2–4 that occurs three or more times in one source, is rare across the
//!    corpus (threshold above), is no stop word nor made of stop words ([`is_cjk_stop`]), does not
//!    start with a numeral or determiner ([`super::stopwords::CJK_NUMERALS`]: a quantity, 两种,
//!    每次), and does not start or end with a function character
//!    ([`super::stopwords::CJK_FUNCTION`]) unless the rest is closed by that character (4a:
//!    祖沖之, 都江堰). Then:
//!    - a. **Boundaries** (accessor variety, Feng et al. 2004; a word ends where what follows is
//!      uncertain, Jin & Tanaka-Ishii 2006). Over the sources a candidate recurs in, each of its
//!      occurrences has an [`Accessor`] on each side: a word boundary (no letter, or a function
//!      character that is not bound to it, i.e. the two together hold less than half of that
//!      character's occurrences in the source), on the left a numeral, determiner or digit, else
//!      the character. A side is closed when one accessor other than a boundary takes three
//!      quarters or more of the occurrences (祖沖 before 之, 卡片盒方 before 法, 张卡片 after
//!      九万/一/每), or when no occurrence has a boundary there and at least half of them cut a
//!      pair of characters that occurs elsewhere in the source, so that the boundary falls
//!      inside a word (活字印|刷: 印刷 is also in 雕版印刷; 胶泥|活字 is no cut, 泥活 is nowhere
//!      else; Sproat & Shih 1990 place boundaries between weakly associated characters); a
//!      candidate with a closed side is a fragment of a longer word.
//!    - b. **Nesting** (C-value, Frantzi, Ananiadou & Mima 2000): a candidate is dropped when a
//!      longer candidate containing it has nearly the same count (within 80 %). Its termhood,
//!      the C-value, is log2(length) × (count − the mean count of the longer candidates
//!      containing it).
//!    - c. **A topic, not a generic word.** A candidate is a term when a heading of a source it
//!      recurs in contains it, or when it is concentrated: at least 4/5 of its occurrences in the
//!      corpus are in one source (content words come in bursts, generic words spread; Katz
//!      1996).
//!    - d. The 50 with the highest C-value are kept (ties: the more frequent, then the smaller
//!      string), except those part of a heading term.
//! 5. A term's title is its most frequent surface form in headings (else in text); ties go to the
//!    shorter, then the smaller string. Other surface forms become aliases.
//!
//! The statistics are incremental ([`DocStats`] per source, summed and subtracted by
//! [`CorpusStats`]): document frequencies are counts of sources, so removing a source undoes
//! exactly what adding it did.

use std::collections::{BTreeMap, BTreeSet};

use super::stopwords::{is_cjk_stop, GENERIC, STOPWORDS};
use crate::markdown::blocks::TextBlock;
use crate::model::PageKind;
use crate::text::is_cjk;

mod cjk;
use cjk::cjk_stats;
pub use cjk::{Accessor, Recurring};

/// The singular of an English word by suffix rules (`-ies` → `-y`; `-ses`, `-xes`, `-ches`, `-shes`
/// lose `-es`; otherwise a final `s` after a non-`s` is dropped for words longer than three letters).
pub fn singular(word: &str) -> String {
    let w = word.to_lowercase();
    if w.len() > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..w.len() - 3]);
    }
    for suffix in ["sses", "xes", "ches", "shes"] {
        if w.len() > suffix.len() + 1 && w.ends_with(suffix) {
            return w[..w.len() - 2].to_string();
        }
    }
    if w.len() > 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        return w[..w.len() - 1].to_string();
    }
    w
}

/// Lowercase singular words of `text` (Latin script; CJK and punctuation separate words).
pub fn norm_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '\'') || is_cjk(c))
        .map(|w| w.trim_matches(|c: char| c == '-' || c == '\'' || c == '_'))
        .filter(|w| !w.is_empty())
        .map(singular)
        .collect()
}

/// A term of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Page title.
    pub title: String,
    /// Entity or concept.
    pub kind: PageKind,
    /// The normalised form (singular lowercase words joined by spaces, or the CJK string).
    pub norm: String,
    /// Every surface form seen, sorted.
    pub forms: Vec<String>,
}

/// A text with its [`norm_words`], computed once for many term counts.
#[derive(Debug, Clone)]
pub struct Tokenized<'a> {
    raw: &'a str,
    words: Vec<String>,
}

impl<'a> Tokenized<'a> {
    /// Tokenizes `raw`.
    pub fn new(raw: &'a str) -> Self {
        Tokenized {
            raw,
            words: norm_words(raw),
        }
    }
}

impl Term {
    /// How often the term occurs in `text`.
    pub fn count_in(&self, text: &str) -> usize {
        self.count_in_tokens(&Tokenized::new(text))
    }

    /// How often the term occurs in an already tokenized text.
    pub fn count_in_tokens(&self, text: &Tokenized<'_>) -> usize {
        if self.norm.chars().any(is_cjk) {
            return text.raw.matches(self.norm.as_str()).count();
        }
        let mut target = self.norm.split(' ');
        let first = target.next().unwrap_or("");
        let rest: Vec<&str> = target.collect();
        let words = &text.words;
        (0..words.len())
            .filter(|&i| {
                words[i] == first
                    && i + rest.len() < words.len()
                    && rest.iter().enumerate().all(|(j, w)| words[i + 1 + j] == *w)
            })
            .count()
    }
}

/// Whether an English word is by its suffix a participle or an adverb, which names nothing on its
/// own and does not end a noun phrase: `-ed` and `-ing` after a stem of three or more letters with
/// a vowel ("associated", "unused", "existing"; not "string", "speed"), and `-ly` after an
/// adjective ending (`-al`, `-ous`, `-ive`, `-ent`, `-ant`, `-ic`: "conditionally"; not "family").
pub fn is_modifier(word: &str) -> bool {
    let stem_ok = |stem: &str| stem.len() >= 3 && stem.contains(['a', 'e', 'i', 'o', 'u', 'y']);
    if let Some(stem) = word.strip_suffix("ing") {
        return stem_ok(stem);
    }
    if let Some(stem) = word.strip_suffix("ed") {
        return !word.ends_with("eed") && stem_ok(stem);
    }
    word.strip_suffix("ly").is_some_and(|stem| {
        stem.len() >= 5
            && ["al", "ous", "ive", "ent", "ant", "ic"]
                .iter()
                .any(|e| stem.ends_with(e))
    })
}

fn is_stop(word_lower: &str) -> bool {
    STOPWORDS.contains(&word_lower)
}

fn is_generic(norm: &str) -> bool {
    GENERIC.contains(&norm)
}

/// Candidate phrases of one heading: (normalised, surface form).
pub fn heading_candidates(heading: &str) -> Vec<(String, String)> {
    let cjk: String = heading
        .chars()
        .filter(|c| is_cjk(*c) && c.is_alphanumeric())
        .collect();
    if !cjk.is_empty()
        && cjk.chars().count() * 2 >= heading.chars().filter(|c| !c.is_whitespace()).count()
    {
        let n = cjk.chars().count();
        return if (2..=8).contains(&n) && !is_cjk_stop(&cjk) {
            vec![(cjk.clone(), cjk)]
        } else {
            Vec::new()
        };
    }
    let mut words: Vec<&str> = heading
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')))
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() > 1 && words[0].to_lowercase().ends_with("ing") {
        words.remove(0);
    }
    let mut out = Vec::new();
    let mut segment: Vec<&str> = Vec::new();
    let mut flush = |segment: &mut Vec<&str>| {
        for (i, w) in segment.iter().enumerate() {
            let n = singular(w);
            if !is_generic(&n) && n.chars().count() > 1 && !n.chars().all(|c| c.is_ascii_digit()) {
                out.push((n.clone(), w.to_string()));
            }
            if let Some(next) = segment.get(i + 1) {
                let n2 = singular(next);
                if !is_generic(&singular(w)) || !is_generic(&n2) {
                    out.push((format!("{} {n2}", singular(w)), format!("{w} {next}")));
                }
            }
        }
        segment.clear();
    };
    for w in words {
        let lower = w.to_lowercase();
        if is_stop(&lower) || lower == "new" {
            flush(&mut segment);
        } else {
            segment.push(w);
        }
    }
    flush(&mut segment);
    out
}

/// One source as the corpus sees it.
pub struct Doc<'a> {
    /// Its blocks.
    pub blocks: &'a [TextBlock],
}

fn best_form(forms: &BTreeMap<String, usize>) -> String {
    forms
        .iter()
        .max_by(|a, b| {
            a.1.cmp(b.1)
                .then_with(|| b.0.len().cmp(&a.0.len()))
                .then_with(|| b.0.cmp(a.0))
        })
        .map(|(f, _)| f.clone())
        .unwrap_or_default()
}

/// Every term of a corpus, by the rules in the module docs, sorted by normalised form.
pub fn corpus_terms(docs: &[Doc<'_>]) -> Vec<Term> {
    let mut stats = CorpusStats::default();
    for d in docs {
        stats.add(&DocStats::of(d));
    }
    stats.terms()
}

/// What one source adds to the statistics its corpus's terms come from (the rules in the
/// module docs): its headings' candidates, the candidates its own text repeats, its capitalised
/// runs and its CJK n-grams. Computed once per source version; [`CorpusStats`] sums them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocStats {
    /// Per heading, its candidates `(normalised, surface form)` in order (rule 1).
    headings: Vec<Vec<(String, String)>>,
    /// The heading candidates this source's own text repeats three times or more (rule 1).
    local: BTreeSet<String>,
    /// Capitalised runs `(normalised, surface form)` of the running text (rule 3).
    caps: Vec<(String, String)>,
    /// CJK 2–4-grams of the running text with their counts (rule 4).
    cjk: BTreeMap<String, usize>,
    /// The CJK n-grams this source repeats (three times or more), with what borders them (rule 4).
    cjk_recurring: BTreeMap<String, Recurring>,
    /// The candidates of its first heading, its title (rule 1).
    title: BTreeSet<String>,
    /// Every word of its running text, once ([`norm_words`]; the document frequencies of rule 1).
    words: BTreeSet<String>,
}

impl DocStats {
    /// The statistics of one source.
    pub fn of(doc: &Doc<'_>) -> DocStats {
        let mut headings = Vec::new();
        for b in doc.blocks {
            if let TextBlock::Heading(_, text) = b {
                headings.push(heading_candidates(text));
            }
        }
        let body: String = doc
            .blocks
            .iter()
            .filter_map(|b| match b {
                TextBlock::Text(t) => Some(t.as_str()),
                TextBlock::Heading(..) => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let tokens = Tokenized::new(&body);
        let mut local = BTreeSet::new();
        for norm in headings.iter().flatten().map(|(n, _)| n) {
            if local.contains(norm) {
                continue;
            }
            let probe = Term {
                title: String::new(),
                kind: PageKind::Concept,
                norm: norm.clone(),
                forms: vec![],
            };
            if probe.count_in_tokens(&tokens) >= 3 {
                local.insert(norm.clone());
            }
        }
        let caps = capitalised_runs(&body)
            .into_iter()
            .map(|run| (norm_words(&run).join(" "), run))
            .collect();
        let title = headings
            .first()
            .map(|h| h.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default();
        let heading_texts: Vec<&str> = doc
            .blocks
            .iter()
            .filter_map(|b| match b {
                TextBlock::Heading(_, t) => Some(t.as_str()),
                TextBlock::Text(_) => None,
            })
            .collect();
        let (cjk, cjk_recurring) = cjk_stats(&body, &heading_texts);
        DocStats {
            headings,
            local,
            caps,
            cjk,
            cjk_recurring,
            title,
            words: tokens.words.iter().cloned().collect(),
        }
    }
}

/// The statistics of a whole corpus: the sum of its sources' [`DocStats`]. Sources come and go
/// one at a time ([`CorpusStats::add`], [`CorpusStats::remove`]), so the terms of a growing
/// wiki cost what the new source adds, not a pass over every source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CorpusStats {
    heading_count: BTreeMap<String, usize>,
    heading_forms: BTreeMap<String, BTreeMap<String, usize>>,
    local: BTreeMap<String, usize>,
    caps: BTreeMap<String, BTreeMap<String, usize>>,
    cjk: BTreeMap<String, usize>,
    /// Sources, N.
    docs: usize,
    /// Per CJK n-gram, the sources it occurs in (document frequency).
    cjk_df: BTreeMap<String, usize>,
    /// Per CJK n-gram, the sources it recurs in (three or more times): how many with each count.
    cjk_recur: BTreeMap<String, BTreeMap<usize, usize>>,
    /// Per recurring CJK n-gram, its left accessors summed over the sources it recurs in.
    cjk_left: BTreeMap<String, BTreeMap<Accessor, usize>>,
    /// Per recurring CJK n-gram, its right accessors summed over the sources it recurs in.
    cjk_right: BTreeMap<String, BTreeMap<Accessor, usize>>,
    /// Per recurring CJK n-gram, its left accessors that cut a pair found elsewhere (summed).
    cjk_left_cut: BTreeMap<String, usize>,
    /// Per recurring CJK n-gram, its right accessors that cut a pair found elsewhere (summed).
    cjk_right_cut: BTreeMap<String, usize>,
    /// Per recurring CJK n-gram, the sources it recurs in and a heading of which contains it.
    cjk_headed: BTreeMap<String, usize>,
    /// Per word, the sources whose running text has it (document frequency).
    word_df: BTreeMap<String, usize>,
    /// Per candidate, the sources whose title has it.
    title: BTreeMap<String, usize>,
}

/// Whether a term in `df` of `n` sources is rare across the corpus: in at most half of them,
/// rounded up (an inverse document frequency ln(N/df) of at least about ln 2; any term of a
/// one-source corpus).
fn is_rare(df: usize, n: usize) -> bool {
    2 * df <= n + 1
}

fn bump<K: Ord + Clone>(map: &mut BTreeMap<K, usize>, key: &K, by: isize) {
    let n = map.get(key).copied().unwrap_or(0) as isize + by;
    if n > 0 {
        map.insert(key.clone(), n as usize);
    } else {
        map.remove(key);
    }
}

/// [`bump`] of `inner` in the map of `outer`, which is dropped when it empties.
fn bump_in<K: Ord + Clone>(
    map: &mut BTreeMap<String, BTreeMap<K, usize>>,
    outer: &str,
    inner: &K,
    by: isize,
) {
    let m = map.entry(outer.to_string()).or_default();
    bump(m, inner, by);
    if m.is_empty() {
        map.remove(outer);
    }
}

impl CorpusStats {
    /// Adds one source.
    pub fn add(&mut self, d: &DocStats) {
        self.apply(d, 1);
    }

    /// Takes one source out (its statistics as added).
    pub fn remove(&mut self, d: &DocStats) {
        self.apply(d, -1);
    }

    fn apply(&mut self, d: &DocStats, by: isize) {
        for heading in &d.headings {
            let mut seen = BTreeSet::new();
            for (norm, form) in heading {
                if seen.insert(norm) {
                    bump(&mut self.heading_count, norm, by);
                }
                let forms = self.heading_forms.entry(norm.clone()).or_default();
                bump(forms, form, by);
                if forms.is_empty() {
                    self.heading_forms.remove(norm);
                }
            }
        }
        for norm in &d.local {
            bump(&mut self.local, norm, by);
        }
        for (norm, run) in &d.caps {
            let forms = self.caps.entry(norm.clone()).or_default();
            bump(forms, run, by);
            if forms.is_empty() {
                self.caps.remove(norm);
            }
        }
        for (gram, n) in &d.cjk {
            bump(&mut self.cjk, gram, by * *n as isize);
            bump(&mut self.cjk_df, gram, by);
        }
        for (gram, r) in &d.cjk_recurring {
            bump_in(&mut self.cjk_recur, gram, &r.count, by);
            for (acc, n) in &r.left {
                bump_in(&mut self.cjk_left, gram, acc, by * *n as isize);
            }
            for (acc, n) in &r.right {
                bump_in(&mut self.cjk_right, gram, acc, by * *n as isize);
            }
            bump(&mut self.cjk_left_cut, gram, by * r.left_cut as isize);
            bump(&mut self.cjk_right_cut, gram, by * r.right_cut as isize);
            if r.headed {
                bump(&mut self.cjk_headed, gram, by);
            }
        }
        for w in &d.words {
            bump(&mut self.word_df, w, by);
        }
        for norm in &d.title {
            bump(&mut self.title, norm, by);
        }
        self.docs = (self.docs as isize + by).max(0) as usize;
    }

    /// Rule 1's distinctiveness: a CJK heading always qualifies; an English candidate ending in a
    /// modifier ([`is_modifier`]) never, except a gerund of a title; otherwise a title candidate
    /// or a two-word one does, a single word only when rare across the corpus's running text
    /// ([`is_rare`]) or when it heads a section in at least half the sources that use it.
    fn distinctive_heading_word(&self, norm: &str) -> bool {
        if norm.chars().any(is_cjk) {
            return true;
        }
        let title = self.title.contains_key(norm);
        let last = norm.rsplit(' ').next().unwrap_or(norm);
        // A gerund in a title names its topic ("Borrowing"); -ed and -ly words never do.
        if is_modifier(last) && !(title && last.ends_with("ing")) {
            return false;
        }
        // A word that heads a section in at least half the sources whose text has it is what
        // those sources are about (a wiki on one subject), however common it is.
        let df = self.word_df.get(norm).copied().unwrap_or(0);
        let headed = self.heading_count.get(norm).copied().unwrap_or(0);
        title || norm.contains(' ') || is_rare(df, self.docs) || 2 * headed >= df
    }

    /// The corpus's terms, by the rules in the module docs, sorted by normalised form.
    pub fn terms(&self) -> Vec<Term> {
        // Rule 1: heading terms — in two or more headings, or repeated in their source's text.
        let mut keep: BTreeSet<String> = self
            .heading_count
            .iter()
            .filter(|(_, &c)| c >= 2)
            .map(|(n, _)| n.clone())
            .collect();
        keep.extend(self.local.keys().cloned());
        keep.retain(|n| self.distinctive_heading_word(n));
        // Rule 2: drop one-word terms that only occur inside a kept two-word term.
        let bigrams: Vec<String> = keep.iter().filter(|n| n.contains(' ')).cloned().collect();
        let heading_count = &self.heading_count;
        keep.retain(|n| {
            n.contains(' ')
                || !bigrams.iter().any(|b| {
                    b.split(' ').any(|w| w == n)
                        && heading_count.get(n).copied().unwrap_or(0)
                            <= heading_count.get(b).copied().unwrap_or(0)
                })
        });
        let mut terms: BTreeMap<String, Term> = BTreeMap::new();
        for norm in keep {
            let forms = self.heading_forms.get(&norm).cloned().unwrap_or_default();
            terms.insert(
                norm.clone(),
                Term {
                    title: best_form(&forms),
                    kind: PageKind::Concept,
                    forms: forms.keys().cloned().collect(),
                    norm,
                },
            );
        }

        // Rule 3: capitalised multi-word terms in running text.
        for (norm, forms) in &self.caps {
            let count: usize = forms.values().sum();
            if count >= 2 && !terms.contains_key(norm) {
                terms.insert(
                    norm.clone(),
                    Term {
                        title: best_form(forms),
                        kind: PageKind::Entity,
                        forms: forms.keys().cloned().collect(),
                        norm: norm.clone(),
                    },
                );
            }
        }

        // Rule 4: recurring CJK terms, unless part of a heading term.
        let heading_terms: Vec<String> = terms.keys().cloned().collect();
        for (term, _) in self.recurring_cjk() {
            if heading_terms
                .iter()
                .any(|k| k.len() > term.len() && k.contains(term.as_str()))
            {
                continue;
            }
            terms.entry(term.clone()).or_insert(Term {
                title: term.clone(),
                kind: PageKind::Concept,
                norm: term.clone(),
                forms: vec![term],
            });
        }
        terms.into_values().collect()
    }
}

/// A corpus's statistics kept between compiles: each source's [`DocStats`] by key, with the
/// version they were computed from, and their sum. A compile brings it up to date with the
/// sources as they are (new and corrected ones added, removed ones taken out), reading the text
/// of the sources it has not seen only.
#[derive(Debug, Clone, Default)]
pub struct CorpusCache {
    docs: BTreeMap<String, (String, DocStats)>,
    stats: CorpusStats,
}

impl CorpusCache {
    /// Takes out the sources not in `current` (key → version) or at another version; returns
    /// the keys of `current` still to add.
    pub fn retain(&mut self, current: &BTreeMap<String, String>) -> Vec<String> {
        let stale: Vec<String> = self
            .docs
            .iter()
            .filter(|(k, (v, _))| current.get(*k) != Some(v))
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            if let Some((_, d)) = self.docs.remove(&k) {
                self.stats.remove(&d);
            }
        }
        current
            .keys()
            .filter(|k| !self.docs.contains_key(*k))
            .cloned()
            .collect()
    }

    /// Adds source `key` at `version` with its `text`.
    pub fn add(&mut self, key: &str, version: &str, text: &str) {
        let blocks = crate::markdown::blocks::text_blocks(text);
        let d = DocStats::of(&Doc { blocks: &blocks });
        self.stats.add(&d);
        self.docs.insert(key.to_string(), (version.to_string(), d));
    }

    /// The terms of the corpus as it stands.
    pub fn terms(&self) -> Vec<Term> {
        self.stats.terms()
    }
}

/// Runs of 2–4 capitalised words (leading stopwords removed) in `text`.
fn capitalised_runs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for sentence in crate::extractive::sentences::sentences(text) {
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let mut run: Vec<&str> = Vec::new();
        let mut flush = |run: &mut Vec<&str>| {
            while run.first().is_some_and(|w| is_stop(&w.to_lowercase())) {
                run.remove(0);
            }
            if (2..=4).contains(&run.len()) {
                out.push(run.join(" "));
            }
            run.clear();
        };
        for w in words {
            let clean = w.trim_matches(|c: char| !c.is_alphanumeric());
            let ends_clause = w.ends_with([',', '.', ';', ':', '!', '?', ')']);
            if clean.chars().next().is_some_and(|c| c.is_uppercase())
                && clean.chars().all(|c| c.is_alphanumeric() || c == '-')
                && clean.chars().count() > 1
            {
                run.push(clean);
                if ends_clause {
                    flush(&mut run);
                }
            } else {
                flush(&mut run);
            }
        }
        flush(&mut run);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::blocks::text_blocks as blocks;

    #[test]
    fn singulars() {
        for (w, s) in [
            ("Vectors", "vector"),
            ("Strings", "string"),
            ("Closures", "closure"),
            ("Slices", "slice"),
            ("Maps", "map"),
            ("References", "reference"),
            ("Ownership", "ownership"),
            ("Errors", "error"),
            ("Properties", "property"),
            ("Boxes", "box"),
            ("Hashes", "hash"),
            ("Traits", "trait"),
            ("Threads", "thread"),
            ("Class", "class"),
            ("Status", "status"),
            ("Analysis", "analysis"),
        ] {
            assert_eq!(singular(w), s, "{w}");
        }
    }

    #[test]
    fn heading_candidates_follow_the_rules() {
        let c = |h: &str| {
            heading_candidates(h)
                .into_iter()
                .map(|(n, _)| n)
                .collect::<Vec<_>>()
        };
        assert_eq!(c("Creating a New Vector"), vec!["vector"]);
        assert_eq!(
            c("Storing Keys with Associated Values in Hash Maps"),
            vec![
                "key",
                "associated",
                "associated value",
                "hash",
                "hash map",
                "map"
            ]
        );
        assert_eq!(c("What Is Ownership?"), vec!["ownership"]);
        assert_eq!(c("The `String` Type"), vec!["string", "string type"]);
        assert_eq!(c("流量控制"), vec!["流量控制"]);
        assert_eq!(c("背压："), vec!["背压"]);
    }

    #[test]
    fn corpus_terms_from_headings_text_and_cjk() {
        let a = blocks("# What Is Ownership?\n\nOwnership is new. Ownership rules. The ownership model.\n\n## Ownership Rules\n\nText about Acme Corp here. Acme Corp again.\n\n## Creating a New Hash Map\n\nx\n");
        let b = blocks("# Hash Maps and Ownership\n\n## Updating a Hash Map\n\n流量控制很重要。流量控制让队列有界。我们需要流量控制。\n");
        let terms = corpus_terms(&[Doc { blocks: &a }, Doc { blocks: &b }]);
        let got: Vec<(&str, PageKind)> = terms.iter().map(|t| (t.title.as_str(), t.kind)).collect();
        assert_eq!(
            got,
            vec![
                ("Acme Corp", PageKind::Entity),
                ("Hash Map", PageKind::Concept),
                ("Ownership", PageKind::Concept),
                ("流量控制", PageKind::Concept)
            ]
        );
        let map = terms.iter().find(|t| t.norm == "hash map").unwrap();
        assert_eq!(map.forms, vec!["Hash Map", "Hash Maps"]);
        assert_eq!(map.count_in("A hash map. Two HashMaps? hash maps!"), 2);
    }

    fn cjk_titles(docs: &[&str]) -> Vec<String> {
        let parsed: Vec<Vec<TextBlock>> = docs.iter().map(|d| blocks(d)).collect();
        let docs: Vec<Doc<'_>> = parsed.iter().map(|b| Doc { blocks: b }).collect();
        corpus_terms(&docs).into_iter().map(|t| t.title).collect()
    }

    #[test]
    fn cjk_terms_are_whole_words() {
        let titles = cjk_titles(&[
            "# 数学史\n\n祖沖之是南朝人。后人纪念祖沖之。祖沖之算出圆周率。祖沖之造过指南车。\n\n他有九万张卡片。每张卡片都有号码。那张卡片很旧。几张卡片放在一起。\n\n雕版印刷很慢。活字印刷很快。活字印刷很省。活字印本很少。活字印本很贵。活字是泥做的。木活字。铜活字。活字很多。活字很小。\n\n两种方法。两种工具。两种纸。\n",
            "# 天气\n\n今天天气很好，我们去公园散步。\n",
            "# 旅行\n\n明天坐火车去海边。\n",
        ]);
        // 之 is bound to 祖沖 (it takes at least half of the 之 of the source): the name is whole.
        assert!(titles.contains(&"祖沖之".to_string()), "{titles:?}");
        // Closed sides: 祖沖 before 之, 张卡片 after numerals and determiners, 活字印 inside 印刷.
        for cut in ["祖沖", "张卡片", "活字印", "两种"] {
            assert!(!titles.contains(&cut.to_string()), "{cut}: {titles:?}");
        }
        assert!(titles.contains(&"活字".to_string()), "{titles:?}");
    }

    #[test]
    fn cjk_generic_words_spread_topics_concentrate() {
        let titles = cjk_titles(&[
            "# 印刷\n\n雕版很贵。雕版很重。雕版要刻。雕版要存。刻好雕版。工具很多，工具很旧，工具很贵。排字很慢，排字很累，排字很难，排字很烦。\n",
            "# 笔记\n\n工具很多，工具很新，工具很贵。\n",
            "# 天气\n\n今天天气很好。\n",
            "# 旅行\n\n明天坐火车去海边。\n",
        ]);
        // All in one source: a topic; in two sources alike: a generic word.
        assert!(titles.contains(&"雕版".to_string()), "{titles:?}");
        assert!(titles.contains(&"排字".to_string()), "{titles:?}");
        assert!(!titles.contains(&"工具".to_string()), "{titles:?}");
    }
}
