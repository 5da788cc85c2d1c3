//! The TypeScript declarations of the JS API that wasm-bindgen cannot derive: option bags with
//! callbacks and signals, the HNSW job and result shapes, `StorageInfo` and the error type. They
//! go verbatim into `pkg/llm_wiki.d.ts`; every other type there is derived (tsify) from the Rust
//! type it describes.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Milliseconds since the Unix epoch (UTC), as `Date.now()` gives them. */
export type Millis = number;
/** An operation id: monotonic, starting at 1. */
export type OpId = number;
/** The name `openContradictions` gave its pages before they were `PageRef`s: the same shape. */
export type PageMention = PageRef;
/** Options of `Wiki.open`. */
export interface OpenWikiOptions {
  /**
   * Called when another tab upgrades or deletes this wiki. Save any draft (the returned promise is
   * awaited), then the connection closes; ask the user to reload.
   */
  onVersionChange?: () => void | Promise<void>;
  /** Milliseconds to wait for other tabs to close before `UPGRADE_BLOCKED`. Default 5000. */
  blockedTimeoutMs?: number;
  /** Vector graph settings of this connection (not stored). Change them only to test the graph path. */
  vectorIndex?: Partial<VectorIndexOptions>;
  /**
   * Where IndexedDB cannot be used at all (Firefox private windows, some embedded webviews:
   * `indexedDB.open` throws `InvalidStateError`), open the wiki in memory instead of throwing
   * `STORAGE_UNAVAILABLE`. Everything works; nothing is kept after the page closes (export a
   * vault). `storageInfo().backend` then says `"memory"`. Default false.
   */
  memoryFallback?: boolean;
}

/** Parameters of the HNSW graph (`vectorRebuildJob().params`, `buildHnswGraph`). */
export interface HnswParams {
  /** Candidate list size while building, 16–800; default 100. */
  efConstruction: number;
  /** Candidate list size while searching (the start of calibration), 16–800; default 100. */
  efSearch: number;
  /** Seed of the level generator (a `bigint`; a safe-integer `number` is accepted too). */
  seed: bigint | number;
  /** The paper's neighbour-selection heuristic; default false (6–19× slower builds). */
  heuristic: boolean;
}

/** Options of `buildHnswGraph`. */
export interface GraphBuildOptions {
  /** Drop a graph that is not predicted cheaper than the exact scan. Default true. */
  requireCheaper: boolean;
}

/** A graph rebuild to run in a Web Worker (`vectorRebuildJob()`). */
export interface VectorRebuildJob {
  /** Give it back to `installVectorGraph`. */
  jobId: number;
  /** The live vectors, `rows × dim` normalised floats, row after row (a copy: transfer it). */
  vectors: Float32Array;
  /** The dimension. */
  dim: number;
  /** Number of rows. */
  rows: number;
  /** The wiki's HNSW parameters. */
  params: HnswParams;
  /** This connection's build options. */
  options: GraphBuildOptions;
}

/** What `buildHnswGraph` produced. */
export interface GraphBuildResult {
  /** The serialised graph, or `null` when it was given up (`verdict`). */
  bytes: Uint8Array | null;
  /** The calibrated `ef_search` (or the last one tried). */
  efSearch: number;
  /** recall@10 on the calibration sample at `efSearch`, 0–1. */
  recall: number;
  /** Mean distance evaluations per calibration query. */
  evaluations: number;
  /** Rows the graph was built over. */
  rows: number;
  /** `"kept"`, `"lowRecall"` or `"notCheaper"`. */
  verdict: GraphVerdict;
}

/** What the browser reports about this origin's storage. */
export interface StorageInfo {
  /** Bytes used by this origin (all wikis), if the browser reports it. */
  usage?: number;
  /** Bytes this origin may use, if the browser reports it. */
  quota?: number;
  /** Whether storage is persistent (not evicted under pressure); always false in memory. */
  persisted: boolean;
  /** Where this wiki is kept: `"indexeddb"`, or `"memory"` (gone when the page closes). */
  backend: "indexeddb" | "memory";
}

/** Options of `compile()` and `estimate()`; every field optional. */
export interface CompileRequest extends Partial<CompileOptions> {
  /** Called as the compile goes: per source, per chunk, per page, commit or failure. */
  onProgress?: (progress: Progress) => void;
  /** Aborts the compile after the current model call; committed sources stay. */
  signal?: AbortSignal;
}

/** Options of `embedPages()`; every field optional. */
export interface EmbedRequest extends Partial<EmbedOptions> {
  /** Called after each saved batch. */
  onProgress?: (progress: EmbedProgress) => void;
  /** Stops after the current batch; saved batches stay. */
  signal?: AbortSignal;
}

/** Options of `ask()`; every field optional. */
export interface AskRequest extends Partial<AskOptions> {
  /** Receives the answer text as it streams. */
  onToken?: (text: string) => void;
  /** Aborts the question. */
  signal?: AbortSignal;
}

/** Every error llm-wiki throws: `name` is "LlmWikiError", `code` is stable. */
export interface LlmWikiError extends Error {
  name: "LlmWikiError";
  code:
    | "QUOTA_EXCEEDED" | "UPGRADE_BLOCKED" | "CLOSED" | "STORAGE_UNAVAILABLE" | "SCHEMA_TOO_NEW"
    | "CONFLICT" | "STORAGE" | "FOLDER" | "INJECTED_FAULT" | "CORRUPT" | "INVALID_INPUT" | "UNSUPPORTED_MIME"
    | "NOT_FOUND" | "CANCELLED" | "UNGROUNDED"
    | "LLM_CONFIG" | "LLM_AUTH" | "LLM_ORIGIN_NOT_ALLOWED" | "LLM_UNREACHABLE" | "LLM_TIMEOUT"
    | "LLM_NOT_AN_ENDPOINT" | "LLM_CONTEXT_OVERFLOW" | "LLM_TRUNCATED" | "LLM_RATE_LIMITED"
    | "LLM_EMPTY_COMPLETION" | "LLM_REJECTED" | "LLM_SERVER" | "LLM_BAD_RESPONSE" | "LLM_BAD_OUTPUT"
    | "LLM_BUDGET_EXCEEDED";
  /** `QUOTA_EXCEEDED` only: bytes this origin uses, from `navigator.storage.estimate()`. */
  usage?: number;
  /** `QUOTA_EXCEEDED` only: bytes this origin may use, from `navigator.storage.estimate()`. */
  quota?: number;
}

/**
 * LLM settings as `setConfig` takes them: `Config` plus the secrets, which `config()` never returns.
 * An absent `apiKey` keeps the stored key; `""` removes it.
 */
export type ConfigInput = Config & {
  /** API key (`Authorization: Bearer`, or `x-api-key` for Anthropic). */
  apiKey?: string;
  /** Extra headers carrying credentials (merged by name; `""` removes one). */
  secretHeaders?: Record<string, string>;
  /** Embedding settings, with their own optional key (default: the chat key). */
  embeddings?: EmbeddingConfig & { apiKey?: string };
};

/** Options of `testConnection`. */
export interface TestConnectionOptions {
  /** Test these settings instead of the stored ones (secrets left out are taken from storage). */
  config?: ConfigInput;
  /** Cancels the test. */
  signal?: AbortSignal;
}
"#;
