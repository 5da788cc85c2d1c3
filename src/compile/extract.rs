//! Extract: what one source says, as structured data (step 1 of the compile pipeline).
//!
//! The LLM (or the offline extractor) reads the source — split to fit the context window, with
//! overlap — together with schema.md and the slice of index.md whose pages the source mentions, and
//! returns an [`Extraction`]. Source text is data inside a delimited block, never instructions.

use serde::{Deserialize, Serialize};

use super::resolve::match_key;
use crate::documents::index_line;
use crate::markdown::passages::Cut;
use crate::markdown::render::pct_encode;
use crate::model::{Claim, Page, PageKind, Stance};
use crate::text::TokenEstimator;

/// One claim the source makes, with the verbatim quote that supports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedClaim {
    /// The claim in the wiki's words (one sentence).
    pub text: String,
    /// A verbatim quote from the source that supports it.
    pub quote: String,
    /// Names of the entities or concepts it is about (as in `entities`).
    #[serde(default)]
    pub about: Vec<String>,
    /// How the source states it ([`Stance`]; `asserted` when the reply leaves it out). Only an
    /// asserted claim can open a contradiction record.
    #[serde(default)]
    pub stance: Stance,
}

/// An entity or concept the source talks about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractedEntity {
    /// Its name as the source writes it (CJK stays CJK).
    pub name: String,
    /// `entity` (person, organisation, product, place, work) or `concept` (idea, technique, term).
    pub kind: String,
    /// Other names for it.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// One line saying what it is.
    #[serde(default)]
    pub description: String,
}

/// A relation between two entities or concepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relation {
    /// Subject name.
    pub from: String,
    /// Object name.
    pub to: String,
    /// What relates them ("uses", "is part of", …).
    pub label: String,
}

/// A claim of the source that disagrees with a claim already in the wiki.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateContradiction {
    /// Id of the existing claim (as listed in the prompt).
    pub existing_claim: String,
    /// The new claim's quote from this source.
    pub quote: String,
    /// What disagrees, in one sentence.
    pub explanation: String,
}

/// The structured result of reading one source (or one chunk of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extraction {
    /// A summary of the source, in markdown (1–3 short paragraphs).
    pub summary: String,
    /// One line for index.md.
    pub one_line: String,
    /// Key claims with verbatim quotes.
    pub claims: Vec<ExtractedClaim>,
    /// Entities and concepts.
    pub entities: Vec<ExtractedEntity>,
    /// Relations between them.
    #[serde(default)]
    pub relations: Vec<Relation>,
    /// Disagreements with existing claims.
    #[serde(default)]
    pub contradictions: Vec<CandidateContradiction>,
}

/// What one extract call reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractInput {
    /// The source key.
    pub source_key: String,
    /// The source title.
    pub source_title: String,
    /// This chunk's text.
    pub text: String,
    /// 1-based chunk number.
    pub part: usize,
    /// Number of chunks.
    pub parts: usize,
    /// schema.md.
    pub schema_md: String,
    /// Index lines of the pages the source likely touches ([`index_slice`]).
    pub index_slice: String,
    /// Existing claims on those pages ([`claim_lines`]).
    pub existing_claims: String,
    /// The pictures this chunk shows that a model has described, sent as `<image>` blocks
    /// after the source. A claim drawn from one quotes the description.
    #[serde(default)]
    pub images: Vec<ImageNote>,
}

/// A picture a source shows, as the extract call sees it: the attachment's name and a model's
/// description of it ([`crate::model::ImageDescription`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageNote {
    /// The attachment's name (`raw/assets/<name>`).
    pub name: String,
    /// The description.
    pub description: String,
}

/// The described pictures of `images` that `chunk` of `text` shows, by name as written or
/// percent-encoded (`![[sales chart.png]]`, `![](raw/assets/sales%20chart.png)`); a picture
/// the text names in neither way goes with the `first` chunk.
pub fn images_of_chunk(
    images: &[ImageNote],
    chunk: &str,
    text: &str,
    first: bool,
) -> Vec<ImageNote> {
    // The name as a whole link target: after `[[`, `(`, `/`, `<`, `|`, a space or a line
    // start, so that `a.png` is not found inside `data.png`.
    let named = |t: &str, name: &str| {
        t.match_indices(name).any(|(i, _)| {
            t[..i]
                .chars()
                .next_back()
                .is_none_or(|c| matches!(c, '[' | '(' | '/' | '<' | '|' | ' ' | '\n'))
        })
    };
    let shows = |t: &str, name: &str| named(t, name) || named(t, &pct_encode(name));
    images
        .iter()
        .filter(|im| shows(chunk, &im.name) || (first && !shows(text, &im.name)))
        .cloned()
        .collect()
}

/// Estimated tokens of `images` as `<image>` blocks in an extract prompt.
pub fn images_cost(images: &[ImageNote], est: &TokenEstimator) -> u64 {
    images
        .iter()
        .map(|i| est.estimate(&i.description) + est.estimate(&i.name) + 12)
        .sum()
}

/// Upper bounds that keep one source from touching too many pages.
pub const MAX_ENTITIES_PER_SOURCE: usize = 15;
/// Upper bound on claims kept per source.
pub const MAX_CLAIMS_PER_SOURCE: usize = 60;

impl Extraction {
    /// The kind an extracted entity maps to.
    pub fn kind_of(e: &ExtractedEntity) -> PageKind {
        match e.kind.trim().to_ascii_lowercase().as_str() {
            "entity" | "person" | "organization" | "organisation" | "product" | "place" => {
                PageKind::Entity
            }
            _ => PageKind::Concept,
        }
    }

    /// Trims every string, drops empty or duplicate items, and caps the counts
    /// ([`MAX_ENTITIES_PER_SOURCE`], [`MAX_CLAIMS_PER_SOURCE`]).
    pub fn normalized(mut self) -> Extraction {
        self.summary = self.summary.trim().to_string();
        self.one_line = self
            .one_line
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let mut seen = std::collections::HashSet::new();
        self.claims.retain_mut(|c| {
            c.text = c.text.trim().to_string();
            c.quote = c.quote.trim().to_string();
            c.about.retain(|a| !a.trim().is_empty());
            !c.text.is_empty()
                && !c.quote.is_empty()
                && seen.insert((c.text.clone(), c.quote.clone()))
        });
        self.claims.truncate(MAX_CLAIMS_PER_SOURCE);
        // Entities with the same match key are one: later names become aliases of the first.
        let mut merged: Vec<ExtractedEntity> = Vec::with_capacity(self.entities.len());
        for mut e in std::mem::take(&mut self.entities) {
            e.name = e.name.trim().to_string();
            e.aliases.retain(|a| !a.trim().is_empty());
            let k = match_key(&e.name);
            if k.is_empty() {
                continue;
            }
            match merged.iter_mut().find(|x| match_key(&x.name) == k) {
                Some(first) => {
                    for a in std::iter::once(e.name).chain(e.aliases) {
                        if a != first.name && !first.aliases.contains(&a) {
                            first.aliases.push(a);
                        }
                    }
                    if first.description.is_empty() {
                        first.description = e.description;
                    }
                }
                None => merged.push(e),
            }
        }
        self.entities = merged;
        self.entities.truncate(MAX_ENTITIES_PER_SOURCE);
        self.relations
            .retain(|r| !r.from.trim().is_empty() && !r.to.trim().is_empty());
        self.contradictions
            .retain(|c| !c.existing_claim.trim().is_empty() && !c.quote.trim().is_empty());
        self
    }

    /// Merges the extraction of a later chunk into this one.
    pub fn merge(&mut self, other: Extraction) {
        if self.summary.is_empty() {
            self.summary = other.summary;
        } else if !other.summary.is_empty() {
            self.summary.push_str("\n\n");
            self.summary.push_str(&other.summary);
        }
        if self.one_line.is_empty() {
            self.one_line = other.one_line;
        }
        self.claims.extend(other.claims);
        for e in other.entities {
            let k = match_key(&e.name);
            match self.entities.iter_mut().find(|x| match_key(&x.name) == k) {
                Some(x) => {
                    for a in std::iter::once(e.name).chain(e.aliases) {
                        if a != x.name && !x.aliases.contains(&a) {
                            x.aliases.push(a);
                        }
                    }
                    if x.description.is_empty() {
                        x.description = e.description;
                    }
                }
                None => self.entities.push(e),
            }
        }
        self.relations.extend(other.relations);
        self.contradictions.extend(other.contradictions);
    }
}

/// The JSON Schema of [`Extraction`]: every property required and no additional properties,
/// except a claim's `stance`, which is asked for but optional — a reply without it (an older
/// prompt's, a model that leaves it out) reads as `asserted` instead of failing validation. So
/// it is not OpenAI strict-mode compatible, and goes out with `strict: false`.
pub fn extraction_schema() -> serde_json::Value {
    let s = |d: &str| serde_json::json!({"type": "string", "description": d});
    let list = |items: serde_json::Value| serde_json::json!({"type": "array", "items": items});
    let obj = |props: serde_json::Value, required: &[&str]| serde_json::json!({"type": "object", "properties": props, "required": required, "additionalProperties": false});
    obj(
        serde_json::json!({
            "summary": s("Summary of the source in markdown, 1-3 short paragraphs, in the source's language."),
            "one_line": s("One line describing the source, for the index."),
            "claims": list(obj(serde_json::json!({
                "text": s("The claim, one sentence."),
                "quote": s("A verbatim quote from the source supporting the claim."),
                "about": list(s("Name of an entity or concept the claim is about, as in entities.")),
                "stance": {"type": "string", "enum": ["asserted", "reported", "retracted", "hypothetical"], "description": "asserted: the source says it in its own voice; reported: it says someone else claimed it; retracted: it says the claim was withdrawn or is no longer so; hypothetical: a possibility or condition."}
            }), &["text", "quote", "about"])),
            "entities": list(obj(serde_json::json!({
                "name": s("Name as the source writes it; CJK names stay CJK."),
                "kind": {"type": "string", "enum": ["entity", "concept"]},
                "aliases": list(s("Another name.")),
                "description": s("One line: what it is.")
            }), &["name", "kind", "aliases", "description"])),
            "relations": list(obj(serde_json::json!({
                "from": s("Subject name."), "to": s("Object name."), "label": s("Relation.")
            }), &["from", "to", "label"])),
            "contradictions": list(obj(serde_json::json!({
                "existing_claim": s("Id of the existing claim, e.g. c1a2b3c4d5."),
                "quote": s("Verbatim quote from this source that disagrees."),
                "explanation": s("What disagrees, one sentence.")
            }), &["existing_claim", "quote", "explanation"]))
        }),
        &[
            "summary",
            "one_line",
            "claims",
            "entities",
            "relations",
            "contradictions",
        ],
    )
}

/// Splits `text` into chunks of at most `max_tokens` (estimated), cutting between CommonMark's
/// top-level blocks (the passage cutter's [`crate::markdown::passages::pieces`]: a fence is never
/// cut at its blank lines), a block too long at line ends, else at sentence ends, else near equal
/// lengths ([`crate::markdown::blocks::hard_split`]); a fenced code block or a table longer than
/// a chunk is cut into pieces that stand alone as markdown (fences closed and reopened, table
/// header rows repeated). Each chunk after the first starts
/// with the last paragraph of the previous one (up to `overlap_tokens`, when the chunk still fits)
/// so a claim spanning a cut is seen whole once. A line inside a fence or table too long for a
/// chunk (minified JSON, base64) is cut into slices, each its own line.
pub fn chunk_text(
    text: &str,
    max_tokens: u64,
    overlap_tokens: u64,
    est: &TokenEstimator,
) -> Vec<String> {
    let max_tokens = max_tokens.max(16);
    if est.estimate(text) <= max_tokens {
        return vec![text.to_string()];
    }
    // Pieces no larger than max_tokens: the passage cutter's blocks, headings included, a long
    // block cut (a fenced code block or a table into pieces that stand alone).
    let pieces = crate::markdown::passages::pieces(text, max_tokens, est);
    // Pieces on adjacent lines (list items, a fence after its lead-in line) join by a line end,
    // others by a blank line.
    let sep = |a: &Cut, b: &Cut| {
        if b.lines.0 == a.lines.1 + 1 {
            "\n"
        } else {
            "\n\n"
        }
    };
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut last: Option<Cut> = None;
    for piece in pieces {
        let candidate = match &last {
            Some(l) if !current.is_empty() => format!("{current}{}{}", sep(l, &piece), piece.text),
            _ => piece.text.clone(),
        };
        if est.estimate(&candidate) <= max_tokens || current.is_empty() {
            current = candidate;
        } else {
            chunks.push(std::mem::take(&mut current));
            // The previous piece again, when it is short and the chunk stays within the budget.
            current = piece.text.clone();
            if let Some(l) = &last {
                let overlapped = format!("{}{}{}", l.text, sep(l, &piece), piece.text);
                if est.estimate(&l.text) <= overlap_tokens.min(max_tokens / 2)
                    && est.estimate(&overlapped) <= max_tokens
                {
                    current = overlapped;
                }
            }
        }
        last = Some(piece);
    }
    if !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks
}

/// Finds page names in a text: a name of two characters or more by [`match_key`] folding (as a
/// substring of the folded text, so `Open AI` finds `OpenAI`); a one-character name (`茶`, `C`)
/// as a whole token of the search tokenizer (a Han character as a unigram, a letter as a word),
/// so a short title is still found without matching inside every word.
pub struct NameMatcher {
    folded: String,
    tokens: std::collections::HashMap<String, usize>,
    /// Every three-byte window of `folded`: a name with a window not in it cannot occur, so most
    /// names are ruled out without searching the text (asking for every page's name is then
    /// about linear in the names, not names × text).
    trigrams: TrigramSet,
}

/// A name folded once for [`NameMatcher`]: its [`match_key`], and for a one-character key the
/// search token it is matched as. Fold a list of names once and ask many matchers.
#[derive(Debug, Clone)]
pub struct FoldedName {
    key: String,
    token: Option<String>,
}

impl FoldedName {
    /// Folds `name` ([`match_key`]; a one-character key also as its search token).
    pub fn new(name: &str) -> Self {
        let key = match_key(name);
        let token = (key.chars().count() == 1)
            .then(|| crate::search::tokenizer::tokenize(name).into_iter().next())
            .flatten();
        FoldedName { key, token }
    }
}

/// A set of byte trigrams as a bitmap of hashed windows: membership may say yes for a window
/// not in the text (the caller then searches the text), never no for one in it. About 8 bits
/// per byte of text (at most 128 KiB), so a false yes is rare.
struct TrigramSet {
    bits: Vec<u64>,
    shift: u32,
}

impl TrigramSet {
    fn new(text: &[u8]) -> Self {
        let want = (text.len() * 8).clamp(1 << 12, 1 << 20);
        let log = usize::BITS - (want - 1).leading_zeros();
        let mut set = TrigramSet {
            bits: vec![0; (1usize << log) / 64],
            shift: 32 - log,
        };
        for w in text.windows(3) {
            let i = set.slot(w);
            set.bits[i / 64] |= 1 << (i % 64);
        }
        set
    }

    fn slot(&self, w: &[u8]) -> usize {
        let v = u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2]);
        // Fibonacci hashing: the top bits of v × 2^32/φ.
        (v.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    fn may_contain(&self, w: &[u8]) -> bool {
        let i = self.slot(w);
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }
}

impl NameMatcher {
    /// Folds and tokenizes `text` once.
    pub fn new(text: &str) -> Self {
        let mut tokens = std::collections::HashMap::new();
        crate::search::tokenizer::for_each_token(text, |t| {
            if t.chars().count() == 1 {
                *tokens.entry(t.to_string()).or_insert(0) += 1;
            }
        });
        let folded = match_key(text);
        let trigrams = TrigramSet::new(folded.as_bytes());
        NameMatcher {
            folded,
            tokens,
            trigrams,
        }
    }

    /// How many times `name` occurs (0 for an empty name).
    pub fn hits(&self, name: &str) -> usize {
        self.count(&FoldedName::new(name))
    }

    /// How many times a folded name occurs (0 for an empty name).
    pub fn count(&self, name: &FoldedName) -> usize {
        match name.key.chars().count() {
            0 => 0,
            1 => name
                .token
                .as_ref()
                .and_then(|t| self.tokens.get(t))
                .copied()
                .unwrap_or(0),
            _ if !self.may_occur(&name.key) => 0,
            _ => self.folded.matches(name.key.as_str()).count(),
        }
    }

    /// Whether a folded name occurs at all: [`NameMatcher::count`] `> 0`, without counting.
    pub fn occurs(&self, name: &FoldedName) -> bool {
        match name.key.chars().count() {
            0 => false,
            1 => name
                .token
                .as_ref()
                .is_some_and(|t| self.tokens.contains_key(t)),
            _ => self.may_occur(&name.key) && self.folded.contains(name.key.as_str()),
        }
    }

    fn may_occur(&self, key: &str) -> bool {
        key.as_bytes()
            .windows(3)
            .all(|w| self.trigrams.may_contain(w))
    }
}

/// Chooses the pages a text is likely about: those whose title or an alias occurs in the text
/// ([`NameMatcher`]), most mentioned first, then in title
/// order, within `budget_tokens` of index lines. Pages the text does not name are left out: the
/// resolve step maps names to pages by title and alias, so an index line helps the model only for a
/// page the text names, and every line is paid for in every extract call. Returns the lines and
/// the keys.
pub fn index_slice(
    text: &str,
    pages: &[Page],
    budget_tokens: u64,
    est: &TokenEstimator,
) -> (String, Vec<String>) {
    let names = NameMatcher::new(text);
    let mut scored: Vec<(usize, &Page)> = pages
        .iter()
        .map(|p| {
            let hits = std::iter::once(&p.title)
                .chain(&p.aliases)
                .map(|n| names.hits(n))
                .sum();
            (hits, p)
        })
        .collect();
    crate::util::sort_by(&mut scored, &|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.title.to_lowercase().cmp(&b.1.title.to_lowercase()))
    });
    let mut out = String::new();
    let mut keys = Vec::new();
    let mut used = 0u64;
    for (hits, p) in scored {
        if hits == 0 {
            break;
        }
        let line = index_line(p);
        let cost = est.estimate(&line);
        if used + cost > budget_tokens {
            break;
        }
        used += cost;
        out.push_str(&line);
        keys.push(p.key.clone());
    }
    (out, keys)
}

/// Lines listing existing claims for contradiction checks: `- [c1a2b3c4d5] text (page: key)`.
pub fn claim_lines(claims: &[Claim]) -> String {
    claims.iter().map(claim_line).collect()
}

/// What the [`claim_lines`] of `claims` would cost, in estimated tokens, counted up to `cap`
/// (`cap` once reached).
pub fn claim_lines_cost_up_to<'a>(
    claims: impl IntoIterator<Item = &'a Claim>,
    cap: u64,
    est: &TokenEstimator,
) -> u64 {
    let mut total = 0u64;
    for c in claims {
        total += est.estimate(&claim_line(c));
        if total >= cap {
            return cap;
        }
    }
    total
}

fn claim_line(c: &Claim) -> String {
    format!("- [{}] {} (page: {})\n", c.id, c.text, c.page)
}

/// The existing claims an extract call checks a chunk against, as [`claim_lines`]: the claims
/// most alike the chunk first, within `budget_tokens` ([`ClaimRanker`]).
pub fn relevant_claim_lines(
    chunk: &str,
    claims: &[Claim],
    budget_tokens: u64,
    est: &TokenEstimator,
) -> String {
    ClaimRanker::new(claims).lines(chunk, budget_tokens, est)
}

/// Ranks existing claims by likeness to a text, to pick the ones a chunk is checked against
/// for contradictions. Built once per source (every claim tokenized once), asked per chunk.
///
/// Likeness: over the claim's *topic tokens* ([`crate::extractive::textrank::tokens`]: NFKC,
/// lower-cased words of two characters or more without English function words or bare numbers,
/// CJK runs as bigrams — a shared bigram is a shared topic, a shared 的 is not) — the summed inverse
/// document frequency over the claims, `ln(1 + N / df)`, of the tokens it shares with the text,
/// divided by the square root of its topic-token count so long claims do not win by length alone
/// (a cosine-like normalisation, as in the vector-space model). A claim sharing no topic token is
/// left out. Ties: page key, then claim id, so the prompt is the same for the same input.
pub struct ClaimRanker<'a> {
    claims: &'a [Claim],
    /// Each claim's topic tokens, sorted: scores are summed in this order, so equal claims score
    /// equally to the last bit and ties fall to the documented order (a `HashSet`'s order is
    /// random per set, and float addition is not associative).
    tokens: Vec<Vec<String>>,
    df: std::collections::HashMap<String, usize>,
}

impl<'a> ClaimRanker<'a> {
    /// Tokenizes every claim once.
    pub fn new(claims: &'a [Claim]) -> Self {
        let tokens: Vec<Vec<String>> = claims
            .iter()
            .map(|c| {
                let mut t: Vec<String> = crate::extractive::textrank::tokens(&c.text)
                    .into_iter()
                    .collect();
                t.sort_unstable();
                t
            })
            .collect();
        let mut df = std::collections::HashMap::new();
        for set in &tokens {
            for t in set {
                *df.entry(t.clone()).or_insert(0) += 1;
            }
        }
        ClaimRanker { claims, tokens, df }
    }

    /// What all the claim lines would cost, in estimated tokens, counted up to `cap`.
    pub fn lines_cost_up_to(&self, cap: u64, est: &TokenEstimator) -> u64 {
        claim_lines_cost_up_to(self.claims, cap, est)
    }

    /// The claim lines for `text`, most alike first, within `budget_tokens`.
    pub fn lines(&self, text: &str, budget_tokens: u64, est: &TokenEstimator) -> String {
        let text_tokens = crate::extractive::textrank::tokens(text);
        let n = self.claims.len() as f64;
        let mut scored: Vec<(f64, &Claim)> = self
            .claims
            .iter()
            .zip(&self.tokens)
            .filter_map(|(c, set)| {
                let shared: f64 = set
                    .iter()
                    .filter(|t| text_tokens.contains(*t))
                    .map(|t| (1.0 + n / self.df[t] as f64).ln())
                    .sum();
                (shared > 0.0).then(|| (shared / (set.len() as f64).sqrt(), c))
            })
            .collect();
        crate::util::sort_by(&mut scored, &|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| (&a.1.page, &a.1.id).cmp(&(&b.1.page, &b.1.id)))
        });
        let mut out = String::new();
        let mut used = 0u64;
        for (_, c) in scored {
            let line = claim_line(c);
            let cost = est.estimate(&line);
            if used + cost > budget_tokens {
                break;
            }
            used += cost;
            out.push_str(&line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::blocks::{closes_fence, fence_marker};

    #[test]
    fn short_text_is_one_chunk() {
        let est = TokenEstimator::default();
        assert_eq!(chunk_text("one\n\ntwo", 100, 10, &est), vec!["one\n\ntwo"]);
    }

    #[test]
    fn chunks_respect_the_budget_and_overlap() {
        let est = TokenEstimator::default();
        let paras: Vec<String> = (0..20)
            .map(|i| format!("Paragraph {i} says something useful here."))
            .collect();
        let text = paras.join("\n\n");
        let chunks = chunk_text(&text, 40, 15, &est);
        assert!(chunks.len() > 3);
        for c in &chunks {
            assert!(est.estimate(c) <= 40, "{c:?}");
        }
        // Every paragraph appears, and consecutive chunks overlap by one paragraph.
        for p in &paras {
            assert!(chunks.iter().any(|c| c.contains(p.as_str())), "{p}");
        }
        let last_of_first = chunks[0].rsplit("\n\n").next().unwrap();
        assert!(chunks[1].starts_with(last_of_first));
    }

    #[test]
    fn fenced_code_is_not_cut_at_its_blank_lines() {
        let est = TokenEstimator::default();
        let text = format!(
            "Intro paragraph here.\n\n```rust\nfn a() {{}}\n\nfn b() {{}}\n```\n\n{}",
            "Tail sentence. ".repeat(30)
        );
        let chunks = chunk_text(&text, 40, 0, &est);
        assert!(
            chunks
                .iter()
                .any(|c| c.contains("```rust\nfn a() {}\n\nfn b() {}\n```")),
            "{chunks:#?}"
        );
    }

    /// Every fence a chunk opens it also closes, and each code piece opens with the block's own
    /// fence line (language kept).
    fn assert_fences_balanced(chunks: &[String]) {
        for c in chunks {
            let mut open: Option<String> = None;
            for line in c.lines() {
                match &open {
                    None => open = fence_marker(line),
                    Some(m) if closes_fence(line, m) => open = None,
                    Some(_) => {}
                }
            }
            assert!(open.is_none(), "a fence left open in {c:?}");
        }
    }

    #[test]
    fn a_code_block_longer_than_a_chunk_is_cut_into_fenced_pieces() {
        let est = TokenEstimator::default();
        let code: String = (0..60)
            .map(|i| format!("    let value_{i} = compute({i}, \"月{i}\");\n"))
            .collect();
        // The fence follows its lead-in line with no blank line between (as pasted notes do).
        let text = format!(
            "Intro paragraph here.\nThe listing:\n~~~~rust\n{code}~~~~\nAfter the code, a sentence."
        );
        let chunks = chunk_text(&text, 120, 20, &est);
        assert!(chunks.len() >= 4, "{chunks:#?}");
        assert_fences_balanced(&chunks);
        for c in &chunks {
            assert!(est.estimate(c) <= 120, "{c:?}");
            if c.contains("let value_") {
                assert!(c.contains("~~~~rust\n    let value_"), "{c:?}");
            }
        }
        // Every code line reaches the model, inside a fence.
        for i in 0..60 {
            let line = format!("let value_{i} = compute({i}, \"月{i}\");");
            assert!(chunks.iter().any(|c| c.contains(&line)), "{line}");
        }
        assert!(chunks[0].starts_with("Intro paragraph here.\nThe listing:"));
        assert!(chunks
            .last()
            .unwrap()
            .ends_with("After the code, a sentence."));
    }

    #[test]
    fn fenced_lines_longer_than_a_chunk_stay_within_the_budget() {
        let est = TokenEstimator::default();
        // One minified line far over the budget, and lines that fit only without the fence lines.
        let minified = format!(
            "Intro.\n\n```json\n{}\n```\n\nAfter.",
            "{\"k\":1},".repeat(2000)
        );
        let long_lines = format!(
            "```rust\n{}```",
            "let a_fairly_long_variable_name = compute_the_thing(1, 2, 3);\n".repeat(20)
        );
        for (text, max) in [(&minified, 1000), (&long_lines, 16), (&long_lines, 40)] {
            let chunks = chunk_text(text, max, 10, &est);
            for c in &chunks {
                assert!(est.estimate(c) <= max, "{} > {max}: {c:?}", est.estimate(c));
            }
            let all: String = chunks.concat();
            let kept = |t: &str| {
                t.chars()
                    .filter(|c| !c.is_whitespace() && *c != '`')
                    .count()
            };
            assert!(kept(&all) >= kept(text), "text lost at {max}");
        }
        let chunks = chunk_text(&minified, 1000, 10, &est);
        assert_fences_balanced(&chunks);
        assert!(chunks
            .iter()
            .filter(|c| c.contains("{\"k\":1}"))
            .all(|c| c.contains("```json\n")));
    }

    #[test]
    fn a_fence_in_a_nested_list_item_is_kept_together() {
        let est = TokenEstimator::default();
        let text = "Intro paragraph with some words in it to take up room.\n\n- outer\n  - inner item text\n\n    ```python\n    def first_function():\n        return compute_value(1)\n\n    def second_function():\n        return compute_value(2)\n    ```\n\nAfter the code.";
        for max in [40, 50] {
            let chunks = chunk_text(text, max, 0, &est);
            assert_fences_balanced(&chunks);
            let code = chunks
                .iter()
                .find(|c| c.contains("def first_function"))
                .unwrap();
            assert!(code.contains("def second_function"), "{chunks:#?}");
            // Balanced fences: "After the code." follows a closed fence, so it reads as text.
            assert!(chunks.iter().any(|c| c.ends_with("After the code.")));
        }
    }

    #[test]
    fn inline_triple_backticks_open_no_fence() {
        let est = TokenEstimator::default();
        let para = "Some words that fill the paragraph and make it long enough to need a cut.";
        let text = format!("```inline``` is code.\n\n{}", [para; 12].join("\n\n"));
        let chunks = chunk_text(&text, 60, 0, &est);
        assert!(chunks.len() > 2);
        // Nothing after the first line is wrapped as code.
        assert_eq!(
            chunks.iter().filter(|c| c.contains("```inline```")).count(),
            1
        );
        assert!(
            chunks[1..].iter().all(|c| !c.contains("```")),
            "{chunks:#?}"
        );
    }

    #[test]
    fn a_table_longer_than_a_chunk_repeats_its_header() {
        let est = TokenEstimator::default();
        let rows: String = (0..40)
            .map(|i| format!("| row {i} | value {i} |\n"))
            .collect();
        let text = format!("| name | value |\n| --- | --- |\n{rows}");
        let chunks = chunk_text(&text, 80, 0, &est);
        assert!(chunks.len() >= 3, "{chunks:#?}");
        for c in &chunks {
            assert!(
                c.starts_with("| name | value |\n| --- | --- |\n| row "),
                "{c:?}"
            );
        }
    }

    #[test]
    fn long_cjk_runs_are_cut_by_characters() {
        let est = TokenEstimator::default();
        let text = "流".repeat(100);
        let chunks = chunk_text(&text, 30, 5, &est);
        assert!(chunks.iter().all(|c| est.estimate(c) <= 30));
        assert!(chunks.concat().chars().filter(|&c| c == '流').count() >= 100);
    }

    #[test]
    fn extraction_normalisation_and_merge() {
        let e = Extraction {
            summary: " S ".into(),
            one_line: "a\n b".into(),
            claims: vec![
                ExtractedClaim {
                    text: "x".into(),
                    quote: "q".into(),
                    about: vec!["".into()],
                    stance: Stance::Asserted,
                },
                ExtractedClaim {
                    text: "x".into(),
                    quote: "q".into(),
                    about: vec![],
                    stance: Stance::Asserted,
                },
                ExtractedClaim {
                    text: "".into(),
                    quote: "q".into(),
                    about: vec![],
                    stance: Stance::Asserted,
                },
            ],
            entities: vec![
                ExtractedEntity {
                    name: "Open AI".into(),
                    kind: "entity".into(),
                    aliases: vec![],
                    description: "".into(),
                },
                ExtractedEntity {
                    name: "OpenAI".into(),
                    kind: "entity".into(),
                    aliases: vec![],
                    description: "".into(),
                },
            ],
            ..Default::default()
        }
        .normalized();
        assert_eq!(
            (
                e.summary.as_str(),
                e.one_line.as_str(),
                e.claims.len(),
                e.entities.len()
            ),
            ("S", "a b", 1, 1)
        );
        assert!(e.claims[0].about.is_empty());
        let mut a = e.clone();
        a.merge(Extraction {
            summary: "T".into(),
            entities: vec![ExtractedEntity {
                name: "openai".into(),
                kind: "entity".into(),
                aliases: vec!["OAI".into()],
                description: "lab".into(),
            }],
            ..Default::default()
        });
        assert_eq!(a.summary, "S\n\nT");
        assert_eq!(a.entities.len(), 1);
        assert_eq!(a.entities[0].aliases, vec!["OpenAI", "openai", "OAI"]);
        assert_eq!(a.entities[0].description, "lab");
    }

    #[test]
    fn schema_asks_for_a_stance_without_requiring_it() {
        let s = extraction_schema();
        assert_eq!(
            s["properties"]["claims"]["items"]["properties"]["stance"]["enum"],
            serde_json::json!(["asserted", "reported", "retracted", "hypothetical"])
        );
        let without: Extraction = serde_json::from_value(serde_json::json!({"summary": "s", "one_line": "s", "claims": [{"text": "t", "quote": "q", "about": []}], "entities": [], "relations": [], "contradictions": []})).unwrap();
        assert_eq!(without.claims[0].stance, Stance::Asserted);
        assert!(crate::llm::parse::validate(&serde_json::to_value(&without).unwrap(), &s).is_ok());
        let odd: ExtractedClaim = serde_json::from_value(
            serde_json::json!({"text": "t", "quote": "q", "stance": "Quoted"}),
        )
        .unwrap();
        assert_eq!(
            odd.stance,
            Stance::Reported,
            "an unknown stance cannot open a record"
        );
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"].as_array().unwrap().len(), 6);
        assert_eq!(
            s["properties"]["claims"]["items"]["required"],
            serde_json::json!(["text", "quote", "about"])
        );
    }
}
