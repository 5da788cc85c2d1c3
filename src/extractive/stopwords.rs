//! The one stop-word list: English function words that carry no topic.
//!
//! The offline model's term finder and TextRank tokens, the query's passage ranking and the
//! browser extension's recall all drop these words.
//!
//! *Invariant:* lowercase ASCII words, each once; nothing else in the crate keeps such a list.

/// English function words that carry no topic (the offline compiler's and
/// the passage ranker's one list).
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "cannot", "could", "did", "do", "does", "doing", "don", "down", "during",
    "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
    "let", "like", "may", "me", "might", "more", "most", "must", "my", "no", "nor", "not", "now",
    "of", "off", "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over", "own",
    "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "us", "use", "used", "using", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "ll", "ve", "re", "s", "t", "d", "m",
];
