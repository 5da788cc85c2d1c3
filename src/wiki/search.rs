//! Searching the pages, in the kernel because every operation that ranks pages shares it (query
//! routing and passages, recall, the compile's candidate pages): a search over the decoded
//! index ([`Wiki::search_index_shared`]) with the question's embedding when the configured model
//! can give one, and the record of the dimension each embedding model returns.
//!
//! *Invariant:* a query vector is only made for the model the stored vectors are of (and the
//! dimension they have), so vectors of different models or dimensions never meet (F28); when
//! none can be made the search runs on BM25 and says so in its status.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::client::AnyEmbedder;
use crate::llm::config::EmbeddingProvider;
use crate::llm::offline::{OfflineEmbedder, OFFLINE_MODEL};
use crate::llm::transport::Transport;
use crate::llm::{Cancel, Embedder};
use crate::records::OBSERVED_DIM_KEY;
use crate::search::{
    EmbeddingStatus, QueryVector, SearchIndex, SearchMode, SearchOptions, SearchResults,
};
use crate::storage::{Batch, Expect, Storage, Store};

use super::Wiki;

/// The contents of the [`OBSERVED_DIM_KEY`] record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ObservedDim {
    model: String,
    dim: usize,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Searches the pages (see [`SearchIndex::search`]).
    /// Without a `query_vector`, the vector and hybrid modes embed the query with the built-in
    /// offline embedding when that is the configured one (see [`Wiki::search_configured`] for an
    /// embedding endpoint).
    pub async fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResults> {
        let mut options = options.clone();
        if options.query_vector.is_none() && options.mode != SearchMode::Bm25 {
            options.query_vector = self.query_vector(query).await?;
        }
        Ok(self.search_index_shared().await?.search(query, &options))
    }

    /// [`Wiki::search`] with the configured embedding: an endpoint embeds the query (one call)
    /// when the stored vectors are of its model; when the endpoint fails, the search runs on
    /// BM25 and says so in its status, like any search without a query vector.
    pub async fn search_configured<T: Transport>(
        &self,
        transport: T,
        query: &str,
        options: &SearchOptions,
    ) -> Result<SearchResults> {
        let mut options = options.clone();
        if options.query_vector.is_none() && options.mode != SearchMode::Bm25 {
            options.query_vector = self
                .query_vector_configured(transport, query, &Cancel::new())
                .await
                .unwrap_or(None);
        }
        self.search(query, &options).await
    }

    /// The question's embedding with the built-in offline model, when that is the configured
    /// embedding (endpoint embeddings of questions need the endpoint: BM25 serves meanwhile).
    pub(crate) async fn query_vector(&self, question: &str) -> Result<Option<QueryVector>> {
        if self.llm_config().await?.embeddings.provider != EmbeddingProvider::Offline {
            return Ok(None);
        }
        Ok(Some(QueryVector {
            model: OFFLINE_MODEL.into(),
            vector: OfflineEmbedder::new().embed_one(question),
        }))
    }

    /// The question's embedding with the configured embedder — `None` when the stored vectors
    /// are of another model (a query vector could not be compared with them), so no call is made.
    ///
    /// Errors: the endpoint's (see [`Embedder::embed`]).
    pub(crate) async fn query_vector_configured<T: Transport>(
        &self,
        transport: T,
        question: &str,
        cancel: &Cancel,
    ) -> Result<Option<QueryVector>> {
        let config = self.llm_config().await?;
        if config.embeddings.provider == EmbeddingProvider::Offline {
            return self.query_vector(question).await;
        }
        let embedder = AnyEmbedder::from_config(&config, transport)?;
        let model = embedder.model();
        let index = self.search_index_shared().await?;
        let dim = self.configured_dim(&index, &model).await?;
        if !matches!(
            index.embedding_status(&model, dim),
            EmbeddingStatus::Ready { .. }
        ) {
            return Ok(None);
        }
        let mut e = embedder.embed(&[question.to_string()], cancel).await?;
        // Another dimension than the stored vectors': the search says `reembedRequired`, and so
        // does the embedding status from now on.
        self.note_dim(&index, &model, e.dimension).await?;
        Ok(e.vectors.pop().map(|vector| QueryVector { model, vector }))
    }

    /// The dimension `model` is expected to return: the one its last call returned when
    /// recorded ([`OBSERVED_DIM_KEY`]), else that of its stored vectors, else 0.
    pub(crate) async fn configured_dim(&self, index: &SearchIndex, model: &str) -> Result<usize> {
        let observed = self
            .storage
            .get(Store::Search, OBSERVED_DIM_KEY)
            .await?
            .and_then(|r| serde_json::from_slice::<ObservedDim>(&r.data).ok())
            .filter(|o| o.model == model)
            .map(|o| o.dim);
        Ok(observed.or_else(|| index.embedding_dim(model)).unwrap_or(0))
    }

    /// Records that `model` returned `dim`-dimensional vectors, when that is news.
    pub(crate) async fn note_dim(
        &self,
        index: &SearchIndex,
        model: &str,
        dim: usize,
    ) -> Result<()> {
        if dim == 0 || self.configured_dim(index, model).await? == dim {
            return Ok(());
        }
        let record = ObservedDim {
            model: model.to_string(),
            dim,
        };
        let mut batch = Batch::new();
        batch.put(
            Store::Search,
            OBSERVED_DIM_KEY,
            serde_json::to_vec(&record).map_err(|e| Error::Storage(e.to_string()))?,
            Expect::Any,
        );
        self.storage.commit(batch).await.map(|_| ())
    }
}
