//! Whether the wiki knows an answer: how much of the question the best page or source passage
//! holds, the score [`Wiki::ask`](crate::wiki::Wiki::ask) declines below
//! ([`super::AskOptions::decline_below`]).
//!
//! **Slots.** The question, folded as the tokenizer folds it, is cut into content *slots*, each
//! one token of the search tokenizer (so a Traditional question's slots are the Simplified tokens
//! the index holds for text in either script). Outside CJK every word that is not a function word
//! ([`STOPWORDS`](crate::extractive::stopwords::STOPWORDS)) is a slot. In a CJK run the slots are
//! its bigrams (the index's CJK tokens), less those touching a function character or a
//! multi-character stop word of the one stop list, and the characters left standing alone
//! ([`slots`]). The stop list holds each form of a word as it is written (Simplified,
//! Traditional, Cantonese), so it is matched before the Traditional → Simplified fold: `係`
//! stays a Cantonese function word though it folds to `系`, a content character.
//!
//! **Weights.** A slot weighs its idf in the collection — the source passages when any source is
//! indexed, else the pages — with BM25's `ln(1 + (N − df + 0.5) / (df + 0.5))`; a slot that
//! occurs nowhere weighs the idf of `df = 0`, the most a term can: a question about something
//! the wiki never mentions ("npm", "去世") cannot be covered.
//!
//! **Score.** A unit (a routed page, or a source passage on offer) holds a weighted share of the
//! slots; the question's score is the mean of its best unit's share (*held*) and of the share the
//! collection holds anywhere (*known*), in `[0, 1]`. A question whose words the wiki has, but in
//! no one place, scores above one with words the wiki never mentions. This is IDF-weighted
//! query-term coverage, the query-performance predictor family of "query clarity" (Cronen-Townsend,
//! Zhou & Croft, SIGIR 2002) and of idf-based pre-retrieval predictors (He & Ounis, SPIRE 2004),
//! applied to the answer's candidates rather than to a whole ranking. A question with no slot
//! (only function words) scores 1: nothing says the wiki lacks it.

use crate::extractive::stopwords::{is_cjk_stopword, CJK_FUNCTION, STOPWORDS};
use crate::extractive::terms::singular;
use crate::search::tokenizer::{fold_case, fold_han, for_each_token, is_cjk_letter};
use crate::search::{HitKind, SearchIndex};

/// Longest CJK stop word matched, in characters.
const STOP_CHARS: usize = 4;

/// One content slot of a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The token (folded): a word, a CJK bigram or a lone CJK character.
    pub token: String,
    /// The token and the other forms of a word that hold it ([`word_forms`]); the token alone
    /// for CJK.
    pub forms: Vec<String>,
    /// True for a CJK bigram that overlaps the slot before it (their shared character is the
    /// last of that one and the first of this one).
    pub joins_previous: bool,
}

/// The question's best unit and its score (see the module docs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Relevance {
    /// The question's score, in `[0, 1]`: the mean of [`Relevance::held`] and
    /// [`Relevance::known`].
    pub score: f32,
    /// The weighted share of the question's slots its best unit holds, in `[0, 1]`.
    pub held: f32,
    /// The weighted share of the question's slots the collection holds anywhere, in `[0, 1]`:
    /// 0 when no word of the question occurs in the wiki (it is about something else, or, asked
    /// in another language than the wiki's, it cannot match lexically at all).
    pub known: f32,
    /// The best unit's key (a page key or a passage key), when any unit was scored.
    pub best: Option<String>,
    /// The slots the best unit lacks, heaviest first (those no unit holds say what the wiki
    /// has nothing on).
    pub unmatched: Vec<String>,
    /// True when the question is written in another script than the text it would be answered
    /// from ([`cross_script`]): its words cannot be matched with that text's, so the score says
    /// nothing about what the wiki knows. Set by the caller, which holds the text.
    pub cross_lingual: bool,
    /// The units the weights were counted over (`N` of the idf).
    pub collection: u32,
    /// How many content slots the question has: 0 when it is only function words ("what is
    /// it?"), whose score of 1 says nothing about where the answer is.
    pub slots: usize,
}

/// The fewest units ([`Relevance::collection`]) whose idf tells a rare word from a common one.
/// In a smaller wiki every word is rare or absent: a common word the few notes happen to lack
/// ("work", "fast") would weigh the most, so there the score declines only a question none of
/// whose words the wiki holds ([`Relevance::declines`]). Seven short Chinese articles cut into
/// 71 passages; three notes, into 4.
pub const MIN_COLLECTION: u32 = 40;

impl Relevance {
    /// Whether the score declines the question at threshold `below`: the score is below it and
    /// it can tell — the collection is large enough ([`MIN_COLLECTION`]) and the question is in
    /// the script of the text ([`Relevance::cross_lingual`]: its other words cannot match, only
    /// names and terms written alike in both, "Obsidian", "BM25") — or no word of the question
    /// occurs in the wiki at all. (A cross-lingual question embedded by an endpoint model is the
    /// caller's to except even then.)
    pub fn declines(&self, below: f32) -> bool {
        let can_tell = self.collection >= MIN_COLLECTION && !self.cross_lingual;
        self.score < below && (can_tell || self.known == 0.0)
    }
}

/// Whether `text` is mostly CJK: its CJK characters outnumber its other words (runs of letters
/// or digits).
pub fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut words, mut in_word) = (0usize, 0usize, false);
    for c in text.chars() {
        if is_cjk_letter(c) {
            cjk += 1;
            in_word = false;
        } else if c.is_alphanumeric() {
            words += usize::from(!in_word);
            in_word = true;
        } else {
            in_word = false;
        }
    }
    cjk > words
}

/// Whether `question` is in another script than `texts` taken together (CJK against the rest,
/// [`mostly_cjk`]): an English question over Chinese sources, or the reverse. False without
/// texts.
pub fn cross_script<'a>(question: &str, texts: impl IntoIterator<Item = &'a str>) -> bool {
    let texts: Vec<&str> = texts.into_iter().collect();
    !texts.is_empty() && mostly_cjk(question) != mostly_cjk(&texts.join("\n"))
}

/// The content slots of `question` (see the module docs), in question order (a word repeated
/// in the question repeats).
pub fn slots(question: &str) -> Vec<Slot> {
    // As written (up to width and case) for the stop list; each character folded for the tokens
    // (`fold_case` and `fold_han` together are the tokenizer's `fold`).
    let written: Vec<char> = fold_case(question).chars().collect();
    let chars: Vec<char> = written.iter().map(|&c| fold_han(c)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let cjk = is_cjk_letter(chars[i]);
        let start = i;
        while i < chars.len() && is_cjk_letter(chars[i]) == cjk {
            i += 1;
        }
        let run: String = chars[start..i].iter().collect();
        if cjk {
            cjk_slots(&written[start..i], &chars[start..i], &mut out);
        } else {
            for_each_token(&run, |t| {
                if !STOPWORDS.contains(&t) {
                    out.push(Slot {
                        token: t.to_string(),
                        forms: word_forms(t),
                        joins_previous: false,
                    });
                }
            });
        }
    }
    out
}

/// A folded word and the inflected forms that stand for it (the index does not stem): without a
/// possessive `'s`, its singular ([`singular`]) and that singular's `-s` plural, and without
/// `-ed` or `-ing` (with and without a final `e`): `cargo's` → `cargo`; `versions` →
/// `version`; `moved` → `mov`, `move`. Forms the index lacks cost nothing.
pub fn word_forms(word: &str) -> Vec<String> {
    let mut forms = vec![word.to_string()];
    let base = word
        .strip_suffix("'s")
        .or_else(|| word.strip_suffix("’s"))
        .unwrap_or(word);
    let one = singular(base);
    let mut add = |f: String| {
        if f.chars().count() > 2 && !forms.contains(&f) {
            forms.push(f);
        }
    };
    add(base.to_string());
    add(one.clone());
    add(format!("{one}s"));
    for suffix in ["ed", "ing"] {
        if let Some(stem) = base.strip_suffix(suffix) {
            add(stem.to_string());
            add(format!("{stem}e"));
        }
    }
    forms
}

/// The slots of one CJK run (`run` as written, `folded` its characters folded to Simplified):
/// its bigrams, less those that touch a function character ([`CJK_FUNCTION`]) or a character of
/// a stop word of two or more characters (longest match first), or are stop words themselves; a
/// character no kept bigram holds and that is no stop word is a unigram slot. (A one-character
/// stop word that is no function character, such as 去 or 年, still pairs: 去世 is a word.) Stop
/// words are matched in `run`; the slots' tokens are taken from `folded`.
fn cjk_slots(run: &[char], folded: &[char], out: &mut Vec<Slot>) {
    let mut stop = vec![false; run.len()];
    let mut i = 0;
    while i < run.len() {
        let longest = (2..=STOP_CHARS.min(run.len() - i))
            .rev()
            .find(|&n| is_cjk_stopword(&run[i..i + n].iter().collect::<String>()));
        match longest {
            Some(n) => {
                stop[i..i + n].iter_mut().for_each(|s| *s = true);
                i += n;
            }
            None => i += 1,
        }
    }
    for (i, s) in stop.iter_mut().enumerate() {
        *s |= CJK_FUNCTION.contains(run[i]);
    }
    let mut held = vec![false; run.len()];
    let mut last_gram: Option<usize> = None;
    for i in 0..run.len().saturating_sub(1) {
        let written: String = run[i..i + 2].iter().collect();
        if !stop[i] && !stop[i + 1] && !is_cjk_stopword(&written) {
            let gram: String = folded[i..i + 2].iter().collect();
            held[i] = true;
            held[i + 1] = true;
            out.push(Slot {
                forms: vec![gram.clone()],
                token: gram,
                joins_previous: last_gram.is_some_and(|j| j + 1 == i),
            });
            last_gram = Some(i);
        }
    }
    for (i, &c) in run.iter().enumerate() {
        if !stop[i] && !held[i] && !is_cjk_stopword(&c.to_string()) {
            out.push(Slot {
                token: folded[i].to_string(),
                forms: vec![folded[i].to_string()],
                joins_previous: false,
            });
        }
    }
}

/// BM25's idf for `df` of `n` units.
fn idf(df: u32, n: u32) -> f32 {
    let (df, n) = (df as f32, n as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The relevance of `question` to its best unit among `units` (`(kind, key)`: routed pages and
/// source passages on offer) in `index` (see the module docs). A unit the index does not hold
/// scores 0; no units give a score of 0 unless the question has no slot.
pub fn relevance(index: &SearchIndex, question: &str, units: &[(HitKind, String)]) -> Relevance {
    let stats = if index.passage_count() > 0 {
        HitKind::Passage
    } else {
        HitKind::Page
    };
    let collection = index.term_doc_freq(stats, "").1;
    let all = slots(question);
    // Per slot, (df, N) of its most frequent form.
    let df: Vec<(u32, u32)> = all
        .iter()
        .map(|s| {
            s.forms
                .iter()
                .map(|f| index.term_doc_freq(stats, f))
                .max_by_key(|d| d.0)
                .unwrap_or((0, 0))
        })
        .collect();
    // A CJK bigram the collection lacks that overlaps one it has straddles two words of the
    // question (谁开 in 谁开发): no slot.
    // (slot, weight, whether the collection holds it)
    let mut slots: Vec<(&Slot, f32, bool)> = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let known = |j: usize| df.get(j).is_some_and(|d| d.0 > 0);
        let straddles = df[i].0 == 0
            && ((s.joins_previous && known(i.wrapping_sub(1)))
                || all.get(i + 1).is_some_and(|n| n.joins_previous) && known(i + 1));
        if !straddles && !slots.iter().any(|(t, ..)| t.token == s.token) {
            slots.push((s, idf(df[i].0, df[i].1), known(i)));
        }
    }
    if slots.is_empty() {
        return Relevance {
            score: 1.0,
            held: 1.0,
            known: 1.0,
            best: units.first().map(|u| u.1.clone()),
            unmatched: Vec::new(),
            cross_lingual: false,
            collection,
            slots: 0,
        };
    }
    slots.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Every weight is above zero (idf of df ≤ N is).
    let total: f32 = slots.iter().fold(0.0, |sum, s| sum + s.1);
    let known = slots.iter().filter(|s| s.2).fold(0.0, |sum, s| sum + s.1) / total;
    // Per unit, which slots it holds.
    let held_by: Vec<Vec<bool>> = units
        .iter()
        .map(|u| {
            slots
                .iter()
                .map(|(s, ..)| s.forms.iter().any(|f| index.unit_holds(u.0, &u.1, f)))
                .collect()
        })
        .collect();
    // The best unit by the share it holds; ties go to the earlier (better-ranked) one.
    let mut best: Option<(usize, f32)> = None;
    for (u, held) in held_by.iter().enumerate() {
        let share = slots
            .iter()
            .zip(held)
            .filter(|(_, h)| **h)
            .fold(0.0, |sum, (s, _)| sum + s.1)
            / total;
        if best.is_none_or(|(_, b)| share > b) {
            best = Some((u, share));
        }
    }
    match best {
        Some((u, held)) => Relevance {
            score: (held + known) / 2.0,
            held,
            known,
            best: Some(units[u].1.clone()),
            unmatched: slots
                .iter()
                .zip(&held_by[u])
                .filter(|(_, h)| !**h)
                .map(|((t, ..), _)| t.token.clone())
                .collect(),
            cross_lingual: false,
            collection,
            slots: slots.len(),
        },
        None => Relevance {
            score: known / 2.0,
            held: 0.0,
            known,
            best: None,
            unmatched: slots.iter().map(|(t, ..)| t.token.clone()).collect(),
            cross_lingual: false,
            collection,
            slots: slots.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(q: &str) -> Vec<String> {
        slots(q).into_iter().map(|s| s.token).collect()
    }

    #[test]
    fn english_slots_drop_function_words() {
        assert_eq!(tokens("What does the dep: prefix do?"), ["dep", "prefix"]);
    }

    #[test]
    fn cjk_slots_are_bigrams_clear_of_function_characters_and_stop_words() {
        // 是 的 一 are function characters; 去 and 年 are one-character stop words, which pair.
        // Slots are folded as the index's tokens are: OpenCC folds 昇 to 升.
        assert_eq!(tokens("毕昇是哪一年去世的？"), ["毕升", "年去", "去世"]);
        // 什么 and 时候 are stop words: no bigram touches them.
        assert_eq!(
            tokens("毕昇在什么时候发明了胶泥活字？"),
            ["毕升", "发明", "胶泥", "泥活", "活字"]
        );
        // A character standing alone between stop words is a unigram slot.
        assert_eq!(tokens("的猫的"), ["猫"]);
    }

    #[test]
    fn traditional_and_simplified_questions_have_the_same_slots() {
        assert_eq!(
            tokens("畢昇發明了什麼活字？"),
            tokens("毕昇发明了什么活字？")
        );
        assert_eq!(
            tokens("現存最早的金屬活字印本是什麼？"),
            tokens("现存最早的金属活字印本是什么？")
        );
        // The stop list is matched as written: Cantonese 係 ("is") is a function word, though
        // it folds to 系, a content character in Mandarin.
        assert!(tokens("係").is_empty());
        assert_eq!(tokens("系"), ["系"]);
    }

    #[test]
    fn a_word_is_held_by_its_inflected_forms() {
        assert_eq!(word_forms("cargo's"), ["cargo's", "cargo", "cargos"]);
        assert_eq!(word_forms("versions"), ["versions", "version"]);
        assert!(word_forms("moved").contains(&"move".to_string()));
        assert!(word_forms("allowing").contains(&"allow".to_string()));
    }

    #[test]
    fn a_question_in_another_script_than_its_text_is_cross_lingual() {
        let zh = "毕昇发明了胶泥活字，这是 Obsidian 里的一段笔记。";
        assert!(cross_script("Who invented movable type?", [zh]));
        assert!(!cross_script("RAG 的分块大小会丢失什么？", [zh]));
        assert!(cross_script(
            "RAG 的分块大小会丢失什么？",
            ["Chunk size trades recall for noise."]
        ));
        assert!(!cross_script("What is a chunk?", []));
    }

    #[test]
    fn a_question_of_function_words_has_no_slot() {
        assert!(slots("What is it?").is_empty());
        assert!(slots("这是什么？").is_empty());
    }
}
