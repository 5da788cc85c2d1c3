//! Search: tokenizer, BM25F, vectors, fusion.
pub mod bm25;
pub mod codec;
pub mod tokenizer;
