/* tslint:disable */
/* eslint-disable */

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


/**
 * A claim: one statement on a page, traced to a source with a verbatim quote (Decision 3).
 */
export interface Claim {
    /**
     * Claim id, e.g. `c7`; also its footnote label `[^c7]`.
     */
    id: string;
    /**
     * The page that states it.
     */
    page: string;
    /**
     * The statement.
     */
    text: string;
    /**
     * The source key.
     */
    sourceKey: string;
    /**
     * The source version the quote was checked against.
     */
    sourceVersion: string;
    /**
     * The supporting quote, verbatim from the source.
     */
    quote: string;
    /**
     * Whether the quote was found in the source text (after whitespace and Unicode normalisation).
     */
    verified: boolean;
    /**
     * How the source states it (the model's reading; `asserted` when not given). Only an
     * asserted claim can be a side of a contradiction record. Omitted from the record when
     * `asserted`, so records written before it existed read the same.
     */
    stance?: Stance;
    /**
     * The attachment whose model-written description the quote comes from
     * ([`ImageDescription`]), when it is not in the source text: such a claim cites that
     * attachment and is never verified (Decision 3).
     */
    fromDescription?: string;
}

/**
 * A compile's update to a page, held because it would drop a human's paragraphs.
 */
export interface HeldUpdate {
    /**
     * The page it would update.
     */
    key: string;
    /**
     * The page as the compile would have written it.
     */
    proposed: Page;
    /**
     * The human paragraphs the proposal drops (present on the stored page, absent from
     * `proposed`), in page order. Empty once the proposal no longer drops any.
     */
    dropped: string[];
    /**
     * The page changed since the update was held (an edit, a fix, a rollback): it can only be
     * rejected; the next compile of its source makes a fresh one if still needed.
     */
    stale: boolean;
}

/**
 * A contradiction the model proposed and the app turned away.
 */
export interface RejectedContradiction {
    /**
     * The pages of the two claims (the existing claim's first; empty when it names none).
     */
    pages: string[];
    /**
     * The existing claim's quote (when there is such a claim), then the quote the model gave
     * from this source.
     */
    quotes: string[];
    /**
     * Why no record opened.
     */
    reason: RejectReason;
}

/**
 * A failure record (`meta/compile-failure/<source key>`).
 */
export interface FailureRecord {
    /**
     * The source version that failed.
     */
    version: string;
    /**
     * Error code.
     */
    code: string;
    /**
     * Message.
     */
    reason: string;
    /**
     * When (ms).
     */
    time: number;
}

/**
 * A fix the user may apply.
 */
export type Fix = { action: "rewriteLink"; page: string; from: string; to: string } | { action: "unlinkBroken"; page: string; target: string } | { action: "createPage"; title: string; mentionedOn: string[] } | { action: "resolveContradiction"; id: string } | { action: "rebuildIndex" } | { action: "recordContradiction"; pages: string[]; claims: string[]; description: string } | { action: "splitPage"; page: string } | { action: "renamePage"; page: string; title: string; dropAliases: string[] } | { action: "mergePages"; survivor: string; merged: string };

/**
 * A human edit of a page (JS: `putPage`). Fields left out keep their current value.
 */
export interface PageEdit {
    /**
     * The page to edit; absent to create a page (its key is derived from the title).
     */
    key?: string | undefined;
    /**
     * Title; required when creating.
     */
    title?: string | undefined;
    /**
     * Kind; default `concept` when creating.
     */
    kind?: PageKind | undefined;
    /**
     * New markdown body.
     */
    body?: string | undefined;
    /**
     * New one-line summary.
     */
    summary?: string | undefined;
    /**
     * New aliases.
     */
    aliases?: string[] | undefined;
    /**
     * New tags.
     */
    tags?: string[] | undefined;
    /**
     * The revision the editor started from; when set and the page moved on, the edit is refused
     * with [`crate::Error::Conflict`] instead of overwriting the newer revision.
     */
    baseRevision?: number | undefined;
}

/**
 * A link in [`WikiGraph`]: page `from` links to page `to`.
 */
export interface GraphEdge {
    /**
     * Key of the linking page.
     */
    from: string;
    /**
     * Key of the linked page.
     */
    to: string;
}

/**
 * A model's description of a picture (see [`Asset::description`]).
 */
export interface ImageDescription {
    /**
     * The description: what the picture shows, with any text in it copied out.
     */
    text: string;
    /**
     * The model that wrote it.
     */
    model: string;
    /**
     * When, in milliseconds since the Unix epoch.
     */
    time: Millis;
}

/**
 * A numbered change to the wiki (Decision 7).
 */
export interface Operation {
    /**
     * Monotonic id.
     */
    id: OpId;
    /**
     * What kind of change.
     */
    kind: OperationKind;
    /**
     * When (ms).
     */
    time: Millis;
    /**
     * One line for log.md.
     */
    summary: string;
    /**
     * Pages written or deleted.
     */
    pages?: string[];
    /**
     * Sources added, corrected, compiled or removed.
     */
    sources?: string[];
    /**
     * Token usage of the LLM calls it made.
     */
    usage?: TokenUsage;
    /**
     * The [`OperationKind::Rollback`] operation that undid this one, if any (see
     * `Wiki::rollback`). Absent from the JSON while it was not rolled back.
     */
    rolledBackBy?: OpId;
    /**
     * The last operation of each other device (one id per slot) this wiki held when this one
     * was made: what it saw (Decision 7), so a merge tells an edit or deletion made after
     * another device's from one made beside it ([`seen_by`]). Absent (`None`) in operations
     * made by a build before it.
     */
    seen?: OpId[];
}

/**
 * A page as a view names it: its key, title and kind (JS: `backlinks` of `pageView`, `pages` of
 * `openContradictions`).
 */
export interface PageRef {
    /**
     * Page key.
     */
    key: string;
    /**
     * Title.
     */
    title: string;
    /**
     * Kind.
     */
    kind: PageKind;
}

/**
 * A page as the viewer shows it (JS: `pageView(key)`).
 */
export interface PageView {
    /**
     * The page record.
     */
    page: Page;
    /**
     * The body rendered to safe HTML (see `markdown::render`).
     */
    html: string;
    /**
     * Pages linking here, sorted by key.
     */
    backlinks: PageRef[];
    /**
     * Attachments the HTML shows (`data-asset` = `sha256`): load each with `asset(sha256)`.
     */
    assets: Asset[];
    /**
     * Link targets that lead nowhere.
     */
    missing: string[];
    /**
     * Ambiguous link targets with their candidates.
     */
    ambiguous: Ambiguity[];
    /**
     * Malformed wikilinks, as written.
     */
    malformed: string[];
}

/**
 * A page changed both in the wiki and in the folder since the mirror last wrote it (JS:
 * `mirrorConflicts()`). The wiki keeps its version, the folder's file keeps the other, until
 * `resolveMirrorConflict`.
 */
export interface MirrorConflict {
    /**
     * The page.
     */
    key: string;
    /**
     * Its file, by path inside the mirror's root.
     */
    path: string;
    /**
     * The file's text (the folder's version).
     */
    theirs: string;
    /**
     * The page as this app would write its file now (the wiki's version), when the page
     * exists; filled in by `mirror_conflicts`, not stored.
     */
    mine?: string;
    /**
     * The sync tool that left this conflict, when one did: a conflict copy beside the page's
     * file (Syncthing, Dropbox, iCloud Drive), or conflict markers in it (git, whose
     * incoming side `theirs` then holds).
     */
    tool?: SyncTool;
    /**
     * The conflict copy holding `theirs`, by path inside the mirror's root: removed when the
     * conflict is decided; a copy deleted outside (decided on another device) ends it.
     */
    copy?: string;
    /**
     * The other device whose operation changed the page at the same time as this one did
     * (merge on read), when one did: `theirs` is then the version the wiki did not keep (of
     * two edits, the earlier writer's in the operations' order), and the file shows the
     * wiki's.
     */
    device?: string;
    /**
     * With `device`: one side deleted the page while the other edited it. The edit is kept
     * and `theirs` is empty: keep the page (`mine`), or delete it (`deletePage`). (When the
     * page is gone since, `theirs` is the edit, which `theirs` brings back.)
     */
    deleted?: boolean;
}

/**
 * A page in [`WikiGraph`].
 */
export interface GraphNode {
    /**
     * Page key.
     */
    key: string;
    /**
     * Title.
     */
    title: string;
    /**
     * Kind.
     */
    kind: PageKind;
    /**
     * Tags (e.g. `offline` for pages the offline compiler wrote).
     */
    tags: string[];
    /**
     * Keys of the sources the page draws on.
     */
    sources: string[];
}

/**
 * A page recall found.
 */
export interface RecalledPage {
    /**
     * Page key.
     */
    key: string;
    /**
     * Title.
     */
    title: string;
    /**
     * Kind.
     */
    kind: PageKind;
    /**
     * One-line summary.
     */
    summary: string;
    /**
     * BM25 score.
     */
    score: number;
}

/**
 * A page whose update was asked again ([`SourceReport::retried`]).
 */
export interface Retried {
    /**
     * The page key.
     */
    page: string;
    /**
     * Why.
     */
    reason: RetryReason;
}

/**
 * A page whose vector the endpoint returned unusable: recorded as null (the page is found by
 * BM25 only until it changes and is embedded again); the other pages of its batch are stored.
 */
export interface SkippedEmbedding {
    /**
     * The page key.
     */
    page: string;
    /**
     * What was wrong with its vector.
     */
    reason: BadVector;
}

/**
 * A query embedding, tagged with the model that made it.
 */
export interface QueryVector {
    /**
     * The embedding model id (the configured one).
     */
    model: string;
    /**
     * The vector (any norm; it is normalised).
     */
    vector: number[];
}

/**
 * A record in the contradiction ledger (Decision 4).
 */
export interface Contradiction {
    /**
     * Record id, e.g. `x3`.
     */
    id: string;
    /**
     * The two (or more) pages involved.
     */
    pages: string[];
    /**
     * The conflicting claim ids.
     */
    claims: string[];
    /**
     * What disagrees, in one or two sentences.
     */
    description: string;
    /**
     * Status.
     */
    status: ContradictionStatus;
    /**
     * The user's note when resolved or scoped.
     */
    note?: string | undefined;
    /**
     * The operation that opened it.
     */
    openedBy: OpId;
    /**
     * The operation that last changed its status.
     */
    closedBy?: OpId | undefined;
}

/**
 * A reply that was not used.
 */
export interface RejectedReply {
    /**
     * The group's pages.
     */
    pages: string[];
    /**
     * Why (the first problem found).
     */
    reason: string;
}

/**
 * A source flagged for instruction-like text ([`crate::wiki::Wiki::source_flags`]).
 */
export interface SourceFlag {
    /**
     * The source key.
     */
    key: string;
    /**
     * The source version the text was checked in.
     */
    version: string;
    /**
     * The phrases found (normalised: lower case, punctuation as spaces; at most 5).
     */
    instructionLike: string[];
}

/**
 * A source passage an answer cites (Decision 3's footnote form: [`SourceCitation::footnote`]).
 */
export interface SourceCitation {
    /**
     * The footnote id the answer cites it with (`s1` for `[^s1]`).
     */
    id: string;
    /**
     * The source key.
     */
    source: string;
    /**
     * The source version the passage was cut from (its text stays readable).
     */
    version: string;
    /**
     * The source's title.
     */
    sourceTitle: string;
    /**
     * The passage's heading path (" › "-joined; "" before the first heading).
     */
    heading: string;
    /**
     * 1-based inclusive line range in that version's text.
     */
    lines: [number, number];
    /**
     * The source's summary page, when it has one (the footnote links it).
     */
    summaryPage: string | undefined;
    /**
     * The passage, verbatim with whitespace folded to single spaces.
     */
    quote: string;
}

/**
 * A source that failed.
 */
export interface SourceFailure {
    /**
     * Source key.
     */
    key: string;
    /**
     * Error code.
     */
    code: string;
    /**
     * Message.
     */
    message: string;
}

/**
 * A source with its text (JS: `source(key)`).
 */
export interface SourceWithText extends Source {
    /**
     * The normalised text of the current version.
     */
    text: string;
}

/**
 * A source: an immutable piece of raw input (a note, a clipped page, a PDF's text).
 *
 * Stored in the `sources` store under [`Source::key`]; its text is stored content-addressed in the
 * `raw` store under `text/<version>`, its original bytes (e.g. clipped HTML) under
 * `original/<sha256>`.
 */
export interface Source {
    /**
     * Stable identity: the URL when there is one, else a vault path or a caller-given key.
     */
    key: string;
    /**
     * SHA-256 (hex) of the normalised text; empty for a legacy record without a hash, which is
     * always treated as changed (field case F34d).
     */
    version?: string;
    /**
     * Display title.
     */
    title: string;
    /**
     * Where it came from, if anywhere.
     */
    url?: string | undefined;
    /**
     * `text/markdown` or `text/plain`.
     */
    mime: string;
    /**
     * When the user captured it (ms since epoch), if known.
     */
    capturedAt?: Millis | undefined;
    /**
     * When this version was added.
     */
    addedAt: Millis;
    /**
     * The operation that added this version.
     */
    op: OpId;
    /**
     * Length of the normalised text in bytes.
     */
    textBytes: number;
    /**
     * MIME type and SHA-256 of the original bytes, when they were kept.
     */
    original?: Artifact | undefined;
    /**
     * Earlier versions of this source, oldest first.
     */
    previousVersions?: string[];
    /**
     * Compile status.
     */
    status: SourceStatus;
    /**
     * Key of the source's summary page, once compiled.
     */
    summaryPage?: string | undefined;
    /**
     * Keys of the pages that continue the summary page, in order, when the source states more
     * facts than one page holds ([`limits`]): `<title> (part 2)`, …. Absent while there are none.
     */
    parts?: string[];
}

/**
 * A starting point for the settings screen.
 */
export interface Preset {
    /**
     * Stable id (`openai`, `ollama`, `ollama-native`, `lm-studio`, `llama-cpp`, `vllm`,
     * `anthropic`, `offline`).
     */
    id: string;
    /**
     * Display name.
     */
    label: string;
    /**
     * Whether the user must enter an API key.
     */
    needsApiKey: boolean;
    /**
     * One or two sentences for the settings screen (CORS recipe, where to find the key).
     */
    notes: string;
    /**
     * The configuration this preset sets (the model may be empty: pick one from the connection
     * test's model list).
     */
    config: Config;
}

/**
 * A wiki mirrored in a picked folder ([`Wiki::mirror_joinable`]).
 */
export interface FolderWiki {
    /**
     * Its folder inside the picked one (`llm-wiki`, `llm-wiki 2`…).
     */
    root: string;
    /**
     * The devices that keep it: those with a folder under `.llm-wiki/devices/`, at least 1.
     */
    devices: number;
    /**
     * Whether it is this wiki (this device's folder is there, or this wiki holds the last
     * operation the folder names): mirror into it, do not join it.
     */
    own: boolean;
}

/**
 * A wiki page: markdown written by the LLM (and the user), with its metadata.
 */
export interface Page {
    /**
     * The page key: its portable file name without `.md`, unique case-insensitively (Decision 6).
     */
    key: string;
    /**
     * The display title (kept exactly, also in frontmatter).
     */
    title: string;
    /**
     * The kind.
     */
    kind: PageKind;
    /**
     * One line for index.md.
     */
    summary?: string;
    /**
     * Other names the page answers to (link resolution goes through them).
     */
    aliases?: string[];
    /**
     * Tags, without `#`.
     */
    tags?: string[];
    /**
     * Keys of the sources this page draws on.
     */
    sources?: string[];
    /**
     * Creation time (ms).
     */
    created: Millis;
    /**
     * Last change (ms).
     */
    updated: Millis;
    /**
     * The markdown body, without frontmatter.
     */
    body: string;
    /**
     * The latest revision number (1-based).
     */
    revision: number;
    /**
     * Frontmatter fields llm-wiki does not own (e.g. `cssclass: wide` added in Obsidian), as the
     * YAML text they had, in order; written back verbatim after the known fields
     * (see `markdown::frontmatter`). Empty when there are none.
     */
    extraFrontmatter?: string;
    /**
     * Facts about this page that compiles kept on their sources' pages because this page was at
     * its hard limit ([`limits`]), per source, oldest first; rendered as the page's
     * `## More facts` section. Absent from the JSON while empty.
     */
    moreFacts?: MoreFacts[];
}

/**
 * An ambiguous link target and the pages it could mean.
 */
export interface Ambiguity {
    /**
     * The target as written.
     */
    target: string;
    /**
     * Keys of every page that answers to it, sorted.
     */
    candidates: string[];
}

/**
 * An attachment: a file in `raw/assets/<name>`.
 */
export interface Asset {
    /**
     * File name: a portable name (see `markdown::keys`), unique case-insensitively.
     */
    name: string;
    /**
     * MIME type.
     */
    mime: string;
    /**
     * SHA-256 (hex) of the bytes.
     */
    sha256: string;
    /**
     * Size in bytes.
     */
    bytes: number;
    /**
     * The operation that added it.
     */
    op: OpId;
    /**
     * What a model saw in the picture, when one was asked (`describeAttachment`, or a compile
     * with `describeImages` on). A derived layer: it is not part of any source's text, so it
     * changes no source's version (Decision 1), and claims drawn from it are never verified
     * (Decision 3).
     */
    description?: ImageDescription;
}

/**
 * An open record of the contradiction ledger (JS: `openContradictions`, `recall`).
 */
export interface OpenContradiction {
    /**
     * Record id, e.g. `x3`.
     */
    id: string;
    /**
     * What disagrees, on one line.
     */
    description: string;
    /**
     * The record's pages that exist, in the record's order.
     */
    pages: PageRef[];
    /**
     * One entry per conflicting claim still stored, in the record's order.
     */
    sides: ContradictionSide[];
}

/**
 * An original artifact kept beside a source (e.g. the clipped HTML), content-addressed.
 */
export interface Artifact {
    /**
     * MIME type of the original, e.g. `text/html`.
     */
    mime: string;
    /**
     * SHA-256 (hex) of the bytes.
     */
    sha256: string;
    /**
     * Size in bytes.
     */
    bytes: number;
}

/**
 * BM25F parameters. Style: pagefind's `RankingWeights` — every knob has a range and both extremes.
 */
export interface Bm25Params {
    /**
     * Term-frequency saturation `k1`. Range `0.0..=3.0`; default 1.2. At 0 a term counts once
     * however often it occurs (binary relevance); towards 3 each extra occurrence keeps adding
     * almost linearly, favouring long, repetitive pages.
     */
    k1?: number;
    /**
     * Length normalisation `b`. Range `0.0..=1.0`; default 0.75. At 0 page length is ignored (long
     * pages win by sheer size); at 1 term frequency is divided by the page's length relative to
     * the average, fully (short pages that mention a term once rank high).
     */
    b?: number;
    /**
     * Weight of a title occurrence relative to the body. Range `0.0..=10.0`; default 3.0. At 0
     * titles are not searched; at 10 a title match outranks nearly any body text.
     */
    titleWeight?: number;
    /**
     * Weight of an alias occurrence. Range `0.0..=10.0`; default 2.0 (an alias is another title,
     * but less certain). At 0 aliases are not searched.
     */
    aliasWeight?: number;
    /**
     * Weight of a body occurrence. Range `0.0..=10.0`; default 1.0. At 0 only titles and aliases
     * are searched.
     */
    bodyWeight?: number;
}

/**
 * Embedding settings, independent of the chat endpoint.
 */
export interface EmbeddingConfig {
    /**
     * Which API (default: the built-in offline embedding).
     */
    provider?: EmbeddingProvider;
    /**
     * Base URL; `None` uses the chat endpoint's base URL.
     */
    baseUrl?: string;
    /**
     * Model name (ignored by the offline embedding).
     */
    model?: string;
    /**
     * The embedding model's input limit in tokens. Longer texts are split into chunks of at
     * most 80 % of this (estimated, Decision 12), embedded, and mean-pooled. Range 64..=1 000 000;
     * default 2048 (nomic-embed-text's default context in Ollama).
     */
    maxInputTokens?: number;
    /**
     * Texts per request. Range 1..=2048; default 32.
     */
    batchSize?: number;
}

/**
 * Facts one source holds about a page that was full ([`Page::more_facts`]).
 */
export interface MoreFacts {
    /**
     * The source key; its summary page holds the facts.
     */
    source: string;
    /**
     * How many facts.
     */
    facts: number;
}

/**
 * How a conflict ends (JS: `resolveMirrorConflict(folder, key, choice, seen)`).
 */
export type ConflictChoice = { keep: "mine" } | { keep: "theirs" } | { keep: "merge"; text: string };

/**
 * How a source states a claim.
 *
 * Read leniently: a missing or empty value is `asserted` (replies and records from before the
 * field existed); a value that is none of the four is `reported`, so it can never open a
 * contradiction record.
 */
export type Stance = "asserted" | "reported" | "retracted" | "hypothetical";

/**
 * How hard to retry. Defaults: 4 attempts, 60 s total wait, backoff 1 s doubling up to 20 s.
 */
export interface RetryPolicy {
    /**
     * Requests per call, the first included. Range 1..=10; 1 never retries.
     */
    maxAttempts?: number;
    /**
     * Cap on the summed waits of one call, in ms. Range 0..=600 000; 0 never waits.
     */
    maxTotalWaitMs?: number;
    /**
     * First backoff when the server sent no `Retry-After`, in ms. Range 0..=60 000.
     */
    baseBackoffMs?: number;
    /**
     * Cap on one backoff, in ms. Range ≥ `baseBackoffMs`, ≤ 600 000.
     */
    maxBackoffMs?: number;
}

/**
 * How much a finding matters.
 */
export type Severity = "error" | "warning" | "info";

/**
 * How structured output is requested (best first). Which one an endpoint takes is learned on
 * the first structured call and remembered per endpoint (field case F13).
 */
export type StructuredMode = "json-schema" | "json-object" | "prompt";

/**
 * How the pages were chosen.
 */
export type RouteMethod = "index" | "shortlist" | "search";

/**
 * How token counts are estimated before a response reports real usage (Decision 12).
 *
 * Defaults: each CJK character ([`is_cjk`]) is one token; other text is one token per four
 * characters (rounded up). Reported usage from the endpoint always replaces the estimate.
 */
export interface TokenEstimator {
    /**
     * Tokens per CJK character. Range `0.1..=4.0`; default 1.0. Lower for tokenizers with large
     * CJK vocabularies (e.g. 0.7), higher for byte-level ones (up to ~2–3).
     */
    cjkTokensPerChar?: number;
    /**
     * Characters per token for all other text. Range `1.0..=8.0`; default 4.0 (English prose with
     * BPE tokenizers). 1.0 overestimates heavily; 8.0 underestimates code and numbers.
     */
    charsPerToken?: number;
}

/**
 * Input of [`crate::wiki::Wiki::add_source`] (JS: `addSource`).
 */
export interface NewSource {
    /**
     * Stable identity. Default: `url` when given, else `sha256:<first 16 hex of the version>`.
     */
    key?: string | undefined;
    /**
     * Display title. Default: the first markdown heading, else the first line, else the key.
     */
    title?: string | undefined;
    /**
     * Where the source came from.
     */
    url?: string | undefined;
    /**
     * `text/markdown` (also `text/x-markdown`) or `text/plain`; parameters such as
     * `; charset=utf-8` are ignored.
     */
    mime: string;
    /**
     * The text (markdown or plain). HTML and PDF are converted in JS first (Decision 2).
     */
    content: string;
    /**
     * The original bytes (e.g. the clipped HTML), kept as the raw artifact.
     */
    original?: Uint8Array | undefined;
    /**
     * MIME type of `original`. Default `text/html`.
     */
    originalMime?: string | undefined;
    /**
     * When the user captured it, in ms since the epoch.
     */
    capturedAt?: number | undefined;
}

/**
 * Lines of a source version ([`Wiki::source_span`]).
 */
export interface SourceSpan {
    /**
     * The source key.
     */
    key: string;
    /**
     * Its title.
     */
    title: string;
    /**
     * The version the lines are of.
     */
    version: string;
    /**
     * True when that is the source's current version.
     */
    current: boolean;
    /**
     * The 1-based inclusive lines given (the last clamped to the text).
     */
    lines: [number, number];
    /**
     * Lines in that version's text.
     */
    totalLines: number;
    /**
     * The lines, joined by `\n`, verbatim.
     */
    text: string;
}

/**
 * Markdown rendered like a page body (JS: `renderMarkdown`).
 */
export interface MarkdownView {
    /**
     * Safe HTML, as `pageView().html` is: assign it to `innerHTML`.
     */
    html: string;
    /**
     * SHA-256 of every attachment shown (`<img data-asset>`), in order, without repeats.
     */
    assets: string[];
    /**
     * Link targets that resolve to no page or attachment.
     */
    missing: string[];
    /**
     * Ambiguous link targets.
     */
    ambiguous: Ambiguity[];
    /**
     * Malformed wikilinks, as written.
     */
    malformed: string[];
}

/**
 * Milliseconds per step.
 */
export interface Timings {
    /**
     * Routing.
     */
    routeMs: number;
    /**
     * Answering.
     */
    answerMs: number;
    /**
     * Writing back.
     */
    writeMs: number;
}

/**
 * One earlier turn of a conversation (for follow-up questions).
 */
export interface Turn {
    /**
     * The question.
     */
    question: string;
    /**
     * The answer given.
     */
    answer: string;
}

/**
 * One finding.
 */
export interface Finding {
    /**
     * Stable id (same problem, same id across runs): `f` + 10 hex of SHA-256.
     */
    id: string;
    /**
     * What kind.
     */
    kind: FindingKind;
    /**
     * How much it matters.
     */
    severity: Severity;
    /**
     * The page where the problem is (empty for wiki-wide findings).
     */
    page: string;
    /**
     * Other pages involved.
     */
    related: string[];
    /**
     * What is wrong, in words.
     */
    message: string;
    /**
     * A proposed fix, if there is one.
     */
    fix: Fix | undefined;
    /**
     * The claim ids an LLM check's finding names: it is listed only while they all exist
     * (empty for the other findings).
     */
    claims?: string[];
}

/**
 * One line of `Wiki::pages`: a page's metadata and body size, without the body.
 */
export interface PageInfo {
    /**
     * Page key.
     */
    key: string;
    /**
     * Title.
     */
    title: string;
    /**
     * Kind.
     */
    kind: PageKind;
    /**
     * One-line summary.
     */
    summary: string;
    /**
     * Last change (ms).
     */
    updated: number;
    /**
     * Latest revision number.
     */
    revision: number;
    /**
     * Size of the body in bytes (UTF-8).
     */
    bytes?: number;
}

/**
 * One page in a [`RollbackPlan`].
 */
export interface PageRollback {
    /**
     * Page key.
     */
    key: string;
    /**
     * Title (as restored, or as it is now when removed).
     */
    title: string;
    /**
     * What happens to it.
     */
    action: PageAction;
    /**
     * For [`PageAction::Restore`], the revision whose state comes back, when known.
     */
    fromRevision: number | undefined;
}

/**
 * One revision of a page with its diff to the revision before (JS: `history`).
 */
export interface HistoryEntry extends Revision {
    /**
     * Unified line diff (3 lines of context) of the page file — frontmatter and body — from the
     * previous revision (or from nothing); empty when the file did not change.
     */
    diff: string;
    /**
     * Lines added.
     */
    added: number;
    /**
     * Lines removed.
     */
    removed: number;
}

/**
 * One revision of a page. Append-only: revisions are never rewritten or deleted by normal
 * operations (Decision 5).
 */
export interface Revision {
    /**
     * The page key.
     */
    page: string;
    /**
     * 1-based revision number.
     */
    number: number;
    /**
     * Who wrote it.
     */
    author: Author;
    /**
     * The operation it belongs to.
     */
    op: OpId;
    /**
     * When (ms).
     */
    time: Millis;
    /**
     * The page as it was after this revision; `None` when the revision deleted the page.
     */
    pageState: Page | undefined;
}

/**
 * One search hit.
 */
export interface SearchHit {
    /**
     * The page key, or for a passage its passage key (`"{source}#L{first}-{last}"`).
     */
    key: string;
    /**
     * A page or a source passage.
     */
    kind?: HitKind;
    /**
     * A passage's source key.
     */
    source?: string;
    /**
     * A passage's source version (SHA-256 of the text it was cut from).
     */
    version?: string;
    /**
     * A passage's heading path (" › "-joined; "" before the first heading).
     */
    heading?: string;
    /**
     * A passage's 1-based inclusive line range in the source text.
     */
    lines?: [number, number];
    /**
     * BM25 score, cosine similarity, or RRF score, by [`SearchResults::mode`].
     */
    score: number;
    /**
     * Why.
     */
    explain: HitExplain;
}

/**
 * One side of an open contradiction: a claim and the page stating it.
 */
export interface ContradictionSide {
    /**
     * The claim id (its footnote label).
     */
    claim: string;
    /**
     * The page stating it.
     */
    page: string;
    /**
     * That page's title (its key when the page is gone).
     */
    title: string;
    /**
     * The statement, on one line.
     */
    text: string;
}

/**
 * One step of the connection test.
 */
export interface ConnectionCheck {
    /**
     * `config`, `models`, `chat`, `stream`, `structured` or `embeddings`.
     */
    name: string;
    /**
     * `ok`, `failed`, or `skipped` (an earlier step failed in a way this one would repeat).
     */
    status: CheckStatus;
    /**
     * What happened, in words.
     */
    detail: string;
    /**
     * The error code when it failed.
     */
    code?: string;
    /**
     * Milliseconds the step took.
     */
    ms: number;
}

/**
 * One term's explanation in a hit (see [`Bm25Index::explain`]).
 */
export interface TermExplain {
    /**
     * The query token (after NFKC + case fold).
     */
    term: string;
    /**
     * How often it was in the query.
     */
    queryCount: number;
    /**
     * Documents containing it (`df`).
     */
    docFreq: number;
    /**
     * `ln(1 + (N − df + 0.5) / (df + 0.5))`.
     */
    idf: number;
    /**
     * Occurrences in this page by field: `[title, aliases, body]`.
     */
    fieldTf: [number, number, number];
    /**
     * The field lengths of this page in tokens: `[title, aliases, body]`.
     */
    fieldLen: [number, number, number];
    /**
     * The weighted, length-normalised frequency `tf~`.
     */
    pseudoTf: number;
    /**
     * This term's share of the score.
     */
    contribution: number;
}

/**
 * One thing waiting for the person's choice beside a page (`proposals()`), tagged by `kind`.
 */
export type Proposal = ({ kind: "update" } & HeldUpdate) | ({ kind: "conflict" } & MirrorConflict);

/**
 * Options of [`SearchIndex::search`].
 */
export interface SearchOptions {
    /**
     * How many hits at most. Default 10; 0 gives none; more than the pages gives all matches.
     */
    k?: number;
    /**
     * Ranking. Default hybrid.
     */
    mode?: SearchMode;
    /**
     * The query's embedding, for vector and hybrid modes. Without it they fall back to BM25.
     */
    queryVector?: QueryVector | undefined;
    /**
     * How many candidates each list contributes to fusion. Default 50 (at least `k`).
     */
    depth?: number;
    /**
     * Include the per-term BM25 breakdown in each hit. Default true.
     */
    explain?: boolean;
    /**
     * Also search the source passages: up to `k` passage hits follow the page hits (each list
     * ranked within its own collection, best first). Default false: pages only.
     */
    passages?: boolean;
}

/**
 * Options of [`Wiki::ask`] (JS: `ask(question, {...})`).
 */
export interface AskOptions {
    /**
     * Earlier turns, oldest first.
     */
    history?: Turn[];
    /**
     * Save the answer as an `analysis` page.
     */
    writeBack?: boolean;
    /**
     * Pages the router may pick. Range 1–20; default 6.
     */
    maxPages?: number;
    /**
     * Pages one hop along links may add. Range 0–10; default 3; 0 disables the hop.
     */
    hopPages?: number;
    /**
     * Share of the context window index.md may take to be routed whole. Range 0.05–0.8;
     * default 0.1. Above it, search shortlists the index first (at most `shortlist` lines,
     * within the same share). The routing call is paid on every question and reading index.md
     * whole grows with the wiki (~26 estimated tokens per page): measured on the benchmark's
     * 133-page wiki (3485-token index.md, 16k window; BENCHMARKS.md "Token cost"), routing
     * read 3591 input tokens per question at 0.5 (the index read whole) against 963 from a
     * 20-line shortlist at 0.1. At 0.1 a 16k window reads an index of about 60 pages whole, a
     * 128k window about 500.
     */
    routingShare?: number;
    /**
     * Index lines the search shortlist gives the router. Range 5–200; default 20 (three times
     * the default `max_pages` to pick from). On the benchmark's wiki a 40-line shortlist cost
     * 1665 routing input tokens per question, 20 lines 963.
     */
    shortlist?: number;
    /**
     * Estimated tokens of page and source text the answer step is given (Decision 12
     * estimates): the passages of the chosen pages and the source passages on offer, ranked
     * together against the question ([`passages::select`]), best first until this is spent.
     * Range 200–100 000; default 1500 (about three of the ~512-token chunks a RAG pipeline
     * sends, or nine of our ≤ 160-token passages). Every routed page is shown by its title and
     * lead line whatever the budget, so each can be cited; the context window is never
     * exceeded. Low values answer from little more than the best few passages; at the top of
     * the range whole pages are given. Measured on the benchmark's wiki, before source
     * passages (answer input per question, system prompt and question included): 1318 tokens
     * at 1000, 1438 at 1500, 2717 at 3000, 3554 with whole pages (100 000).
     */
    answerBudget?: number;
    /**
     * Decline when the question's relevance ([`Answer::relevance`], [`relevance`]) is below
     * this: no answer call, and the closest pages as [`Answer::suggestions`]. Range 0–1;
     * default [`DECLINE_BELOW`]; 0 never declines while anything was found. A question
     * in another script than the text on offer ([`Answer::cross_lingual`]) is not declined on this
     * ground when it was embedded by an endpoint model, which may match across languages; a wiki
     * of fewer than [`relevance::MIN_COLLECTION`] units declines on it only a question none of
     * whose words it holds ([`relevance::Relevance::declines`]).
     */
    declineBelow?: number;
    /**
     * Who routes the question to pages ([`Router`]). Default `auto`: the model, unless search
     * already found one page or source passage that holds every content word of the question
     * (then the routing call, about 800 input tokens on the benchmark's wikis, is not paid).
     */
    router?: Router;
}

/**
 * Options of [`Wiki::compile`] (JS: `compile({...})`).
 */
export interface CompileOptions {
    /**
     * Recompile every selected source, even compiled and unchanged ones.
     */
    force?: boolean;
    /**
     * Only these source keys (default: every pending source).
     */
    sources?: string[] | undefined;
    /**
     * Integrate calls in flight at once. Range 1–16; default 4. 1 is slowest and gentlest on a
     * local model; 16 suits hosted endpoints with high rate limits.
     */
    parallelism?: number;
    /**
     * The model's context window in tokens. Range 2 048–2 000 000; default 8 192. Sources are
     * split so that one extract call fits.
     */
    contextWindow?: number;
    /**
     * Tokens reserved for each reply. Range 256–65 536; default 2 048.
     */
    maxOutputTokens?: number;
    /**
     * Share of the context window for the index slice in extract prompts. Range 0.05–0.5;
     * default 0.2.
     */
    indexShare?: number;
    /**
     * Cap on the tokens (input + output) of each source's compile — one operation (Decision 12);
     * `None` for no cap. A source that would exceed it fails with `LLM_BUDGET_EXCEEDED` and the
     * wiki is left as it was.
     */
    tokenBudget?: number | undefined;
    /**
     * Token estimation (Decision 12).
     */
    estimator?: TokenEstimator;
}

/**
 * Options of [`Wiki::embed_pages`] (JS: `embedPages({...})`).
 */
export interface EmbedOptions {
    /**
     * Start a re-embed when the stored vectors are of another model. Default false.
     */
    confirm?: boolean;
    /**
     * Texts per embedding call. Range 1–256; default 32.
     */
    batchSize?: number;
}

/**
 * Options of [`Wiki::lint`](crate::wiki::Wiki::lint).
 */
export interface LintOptions {
    /**
     * A page not updated for this many days is stale. Range 1–3650; default 180.
     */
    staleDays?: number;
    /**
     * Only these pages (keys; matched as `Wiki::page` matches them): the findings about them,
     * reading their bodies and the page table only — for the pages an operation changed. The
     * wiki-wide checks (source texts against their hashes, index drift) run in a full lint
     * only. `None` (the default): every page.
     */
    pages?: string[];
}

/**
 * Options of [`Wiki::recall`]; every field optional.
 */
export interface RecallOptions {
    /**
     * How many pages at most. Default 6.
     */
    k?: number;
    /**
     * A page must score at least this share of the best hit's BM25 score, 0–1. Default 0.3 (0
     * keeps every page with enough terms; 1 only the best).
     */
    minShare?: number;
    /**
     * A page must match at least this many distinct topic terms of the query. Default 3 (0 or
     * 1 lets a page in on one shared word).
     */
    minTerms?: number;
    /**
     * Characters of the text's body that go into the query (after the title). Default 600.
     */
    chars?: number;
}

/**
 * Options of a vault import; every field optional.
 */
export interface ImportOptions {
    /**
     * What template notes (Templater `<% … %>`, core `{{date}}`/`{{title}}`) become.
     */
    templates?: TemplateNotes;
}

/**
 * Options of the LLM lint checks.
 */
export interface LlmLintOptions {
    /**
     * Most page groups checked, one call each (the largest groups first). Range 1–500; default 20.
     */
    maxGroups?: number;
    /**
     * Most characters of each page body sent (claims are always sent). Range 200–20 000;
     * default 1 500.
     */
    excerptChars?: number;
    /**
     * Output cap of one call, in tokens. Range 128–8 192; default 1 024.
     */
    maxOutputTokens?: number;
}

/**
 * Outcome of a [`ConnectionCheck`].
 */
export type CheckStatus = "ok" | "failed" | "skipped";

/**
 * Per-operation overrides (Decision 12: the model can differ per operation, each operation has a
 * token budget). `None` uses the top-level value.
 */
export interface PurposeSettings {
    /**
     * Model for this operation.
     */
    model?: string;
    /**
     * Output-token cap per call for this operation.
     */
    maxOutputTokens?: number;
    /**
     * Token budget (input + output, all calls) of one operation of this kind.
     */
    tokenBudget?: number;
}

/**
 * Progress of [`Wiki::embed_pages`]: pages embedded so far of those that needed it.
 */
export interface EmbedProgress {
    /**
     * Pages embedded and saved (those whose vector was unusable included).
     */
    done: number;
    /**
     * Pages that needed a vector when the run started.
     */
    total: number;
}

/**
 * Progress of a compile, reported as it goes.
 */
export type Progress = { stage: "source"; key: string; index: number; total: number } | { stage: "extracted"; key: string; part: number; parts: number } | { stage: "integrated"; key: string; page: string; done: number; total: number } | { stage: "committed"; key: string; op: OpId } | { stage: "describing"; name: string; index: number; total: number } | { stage: "failed"; key: string; code: string; message: string };

/**
 * Records and bytes one connection moved through one store.
 */
export interface StoreIo {
    /**
     * Records read (a `get` that found one, each record a scan returned).
     */
    reads: number;
    /**
     * Bytes of the records read.
     */
    readBytes: number;
    /**
     * Puts in committed batches.
     */
    writes: number;
    /**
     * Bytes of those puts.
     */
    writtenBytes: number;
    /**
     * Deletes in committed batches.
     */
    deletes: number;
}

/**
 * Report of [`crate::wiki::Wiki::add_source`].
 */
export interface AddSourceReport {
    /**
     * The source key.
     */
    key: string;
    /**
     * The version (SHA-256 hex of the normalised text).
     */
    version: string;
    /**
     * Added, unchanged or corrected.
     */
    outcome: AddOutcome;
    /**
     * The operation, when something was written.
     */
    op: OpId | undefined;
    /**
     * The version this one replaced, for a corrected source.
     */
    previousVersion: string | undefined;
}

/**
 * Settings of the vector graph kept by an open [`Wiki`] (per connection, never stored). JS:
 * `Wiki.open(name, { vectorIndex: { minRows, requireCheaper } })`.
 */
export interface VectorIndexOptions {
    /**
     * Live vectors from which an HNSW graph is built ([`Wiki::vector_rebuild_job`]). Default
     * [`HNSW_MIN_ROWS`]; values below 1 count as 1. Lower it only to test the graph path.
     */
    minRows?: number;
    /**
     * Drop a graph that is not predicted cheaper than the exact scan
     * ([`crate::search::vectors::GRAPH_EVAL_COST`]). Default true; false only for tests, which
     * need a graph on a few dozen rows.
     */
    requireCheaper?: boolean;
}

/**
 * Status of a contradiction record.
 */
export type ContradictionStatus = "open" | "resolved" | "scoped";

/**
 * The LLM configuration of one wiki (stored in its `meta/config` record, secrets apart).
 *
 * Numbers are tokens unless named otherwise. Defaults: `contextWindow` 8192,
 * `maxOutputTokens` 2048, `timeoutMs` 120 000, `tokenBudget` 200 000.
 */
export interface Config {
    /**
     * The preset this configuration started from (`openai`, `ollama`, …), for display only.
     */
    preset?: string;
    /**
     * The protocol.
     */
    provider?: Provider;
    /**
     * Base URL as the user entered it (normalised when used, see `llm::url`).
     */
    baseUrl?: string;
    /**
     * The default model.
     */
    model?: string;
    /**
     * Extra request headers (non-secret). Headers whose name looks secret (`authorization`,
     * `cookie`, or containing `key`, `token`, `secret`, `auth`) are moved to
     * [`Config::secret_headers`] by [`Config::normalize`].
     */
    headers?: Record<string, string>;
    /**
     * The model's context window. Range 256..=10 000 000; default 8192. Prompts estimated above
     * 1.25× it are refused before sending; one estimated above it that the server counts below
     * 0.8× the estimate was cut by the server and fails with `LLM_CONTEXT_OVERFLOW`
     * (`llm::client::server_truncation`). For the Ollama provider it is sent as
     * `options.num_ctx`.
     */
    contextWindow?: number;
    /**
     * Output-token cap per call. Range 1..=context window; default 2048.
     */
    maxOutputTokens?: number;
    /**
     * Milliseconds to wait for a response to start (its headers, then its first byte), plus
     * [`START_MS_PER_PROMPT_TOKEN`] per estimated prompt token (a model on CPU reads a long
     * prompt for minutes before its first token), up to [`START_MS_CAP`] in all. Range
     * 1000..=3 600 000; default 120 000.
     */
    timeoutMs?: number;
    /**
     * Milliseconds a response that started may go without a byte before it fails with
     * `LLM_TIMEOUT` and is aborted (a stalled stream); a stream that keeps producing is never
     * cut. Range 1000..=3 600 000; default 60 000. Absent in settings stored before it existed.
     */
    idleTimeoutMs?: number;
    /**
     * Token budget (input + output of all calls) of one operation. Range 1..; default 200 000.
     */
    tokenBudget?: number;
    /**
     * Overrides for the compile operation.
     */
    compile?: PurposeSettings;
    /**
     * Overrides for queries.
     */
    query?: PurposeSettings;
    /**
     * Overrides for lint.
     */
    lint?: PurposeSettings;
    /**
     * Embeddings (default: the built-in offline embedding).
     */
    embeddings?: EmbeddingConfig;
    /**
     * Token estimates used until a response reports usage (Decision 12).
     */
    estimator?: { cjkTokensPerChar: number; charsPerToken: number };
    /**
     * Retries on rate limits and overload.
     */
    retry?: RetryPolicy;
    /**
     * Describe pictures with the compile model before a source that shows them is compiled
     * (opt-in, default off: the pictures are sent to the endpoint, and its model must read
     * images: OpenAI-compatible vision models, Anthropic, Ollama's vision models). The
     * descriptions are kept with the attachments; claims drawn from them are never verified.
     */
    describeImages?: boolean;
}

/**
 * The answer of [`SearchIndex::search`].
 */
export interface SearchResults {
    /**
     * Best first.
     */
    hits: SearchHit[];
    /**
     * The mode actually used (BM25 when vectors could not serve).
     */
    mode: SearchMode;
    /**
     * Why a fallback happened, or `Ok`.
     */
    status: SearchStatus;
}

/**
 * The configuration as shown to the user: no secret, only whether one is set.
 */
export interface ConfigView extends Config {
    /**
     * True when an API key is stored.
     */
    hasApiKey: boolean;
    /**
     * True when a separate embeddings API key is stored.
     */
    embeddingsHasApiKey: boolean;
    /**
     * Names of the extra headers stored as secrets (values hidden).
     */
    secretHeaderNames: string[];
}

/**
 * The estimated cost of compiling one source.
 */
export interface SourceEstimate {
    /**
     * Source key.
     */
    key: string;
    /**
     * Source title.
     */
    title: string;
    /**
     * Extract calls (chunks).
     */
    chunks: number;
    /**
     * All model calls.
     */
    calls: number;
    /**
     * Input tokens.
     */
    input: number;
    /**
     * Output tokens (upper bound).
     */
    output: number;
}

/**
 * The kind of a wiki page; also its folder in the vault (`wiki/<kind>/<key>.md`).
 */
export type PageKind = "source" | "entity" | "concept" | "comparison" | "overview" | "analysis";

/**
 * The mirror's state as the app shows it (JS: `mirrorStatus()`).
 */
export interface MirrorStatus {
    /**
     * The mirror's folder inside the picked one.
     */
    root: string;
    /**
     * The last operation the folder holds.
     */
    synced: OpId;
    /**
     * Operations done since that the folder does not hold yet.
     */
    behind: number;
    /**
     * Files the mirror keeps there (not counting one file per operation).
     */
    files: number;
    /**
     * Whether a run was cut short (the next run finishes it).
     */
    interrupted: boolean;
    /**
     * Pages whose file was deleted outside, waiting for the person to delete the page or
     * write its file back (`restorePageFile`).
     */
    deleted: string[];
    /**
     * Pages changed on both sides, waiting for a choice (`mirrorConflicts`).
     */
    conflicts: number;
}

/**
 * The sync tool a conflict came from.
 */
export type SyncTool = "syncthing" | "dropbox" | "icloud" | "git";

/**
 * The wiki as a graph (JS: `graph()`): every page, and one edge per pair of pages where the first
 * links to the second (links and embeds, resolved as in [`LinkGraph`]: case-insensitively and
 * through aliases; links to missing or ambiguous targets and to the page itself are left out).
 */
export interface WikiGraph {
    /**
     * Every page, sorted by key.
     */
    nodes: GraphNode[];
    /**
     * Every link between two distinct pages, sorted by `from`, then `to`.
     */
    edges: GraphEdge[];
}

/**
 * Token usage of one or more LLM calls.
 */
export interface TokenUsage {
    /**
     * Prompt (input) tokens.
     */
    input: number;
    /**
     * Completion (output) tokens.
     */
    output: number;
    /**
     * Number of LLM calls.
     */
    calls: number;
    /**
     * True when any part was estimated (Decision 12) rather than reported by the endpoint.
     */
    estimated: boolean;
}

/**
 * What [`Wiki::ask`] returns.
 */
export interface Answer {
    /**
     * The answer, markdown, citations as `[[key]]` / `[[key|text]]`.
     */
    answer: string;
    /**
     * Pages the answer cites (every one was given to the model), in order of first citation.
     */
    citations: string[];
    /**
     * Source passages the answer cites as footnotes (every one was given to the model), in
     * order of first citation; their definitions end `answer`.
     */
    sourceCitations?: SourceCitation[];
    /**
     * Source passages given to the answer step (their keys, `"{source}#L{a}-{b}"`).
     */
    passages?: string[];
    /**
     * Citations removed because they named no page the answer was given.
     */
    removedCitations: string[];
    /**
     * Pages routing chose.
     */
    routed: string[];
    /**
     * Pages the one-hop expansion added.
     */
    hopped: string[];
    /**
     * How routing worked.
     */
    route: RouteMethod | undefined;
    /**
     * True for an extractive (offline) answer.
     */
    extractive: boolean;
    /**
     * Token usage of the model calls (the sum of the two below).
     */
    usage: TokenUsage;
    /**
     * Token usage of the routing call (zero when search routed alone; absent from answers
     * saved before it was reported).
     */
    routeUsage?: TokenUsage;
    /**
     * Token usage of the answer call (zero for an extractive answer).
     */
    answerUsage?: TokenUsage;
    /**
     * Time per step.
     */
    timings: Timings;
    /**
     * The analysis page written back, if any.
     */
    saved: string | undefined;
    /**
     * True when the answer cites two or more pages (worth offering "save to wiki").
     */
    worthSaving: boolean;
    /**
     * True when the answer rests on the wiki: it cites at least one page or source passage it
     * was given. An
     * ungrounded answer is shown as such and [`Wiki::write_back`] refuses it. Answers from
     * before the field existed read as grounded when they cite a page.
     */
    grounded?: boolean;
    /**
     * True when routing found no page for the question, or its [`Answer::relevance`] is below
     * [`AskOptions::decline_below`] (with that option's exceptions): no answer call was made
     * and `answer` says the wiki has nothing on it ([`DECLINED_ANSWER`]).
     */
    declined?: boolean;
    /**
     * When declined: the closest pages (keys, best first), where the wiki comes nearest to the
     * question. Empty otherwise.
     */
    suggestions?: string[];
    /**
     * How much of the question the wiki holds, in `[0, 1]` ([`relevance`]: the IDF-weighted
     * share of its content words held by the best routed page or source passage on offer,
     * averaged with the share the wiki holds anywhere; 0 when no word of it occurs); below
     * [`AskOptions::decline_below`] the question is declined. 0 for answers saved before the
     * field existed.
     */
    relevance?: number;
    /**
     * The question's content words (slots, [`relevance::slots`]) its best page or passage
     * lacks, rarest first: for a declined question, what the wiki has nothing on.
     */
    unmatched?: string[];
    /**
     * True when the question is in another script than the text it would be answered from
     * (an English question over Chinese sources: [`relevance::cross_script`]). Offline such a
     * question is declined below the threshold like any other, since the offline search cannot
     * match across languages; with an endpoint embedding it is answered.
     */
    crossLingual?: boolean;
}

/**
 * What [`Wiki::compile`] did.
 */
export interface CompileReport {
    /**
     * Compiled sources, in order.
     */
    compiled: SourceReport[];
    /**
     * Failed sources (each left pending, the wiki unchanged by it).
     */
    failed: SourceFailure[];
    /**
     * Total token usage (the pictures' descriptions included).
     */
    usage: TokenUsage;
    /**
     * Total unverified claims.
     */
    unverified: number;
    /**
     * Pictures described before the compile (with `describeImages` on), and those that could
     * not be: their sources were compiled from their text alone.
     */
    images?: ImagesReport;
}

/**
 * What [`Wiki::delete_page`] did.
 */
export interface DeleteReport {
    /**
     * The deleted page's key.
     */
    key: string;
    /**
     * Keys of the pages whose links to it became plain text.
     */
    unlinked: string[];
    /**
     * The operation.
     */
    op: OpId;
}

/**
 * What [`Wiki::embed_pages`] did.
 */
export interface EmbedReport {
    /**
     * The embedding model.
     */
    model: string;
    /**
     * Pages embedded and saved in this run (with a usable vector; see `skipped`).
     */
    embedded: number;
    /**
     * Source passages embedded and saved in this run (after the pages).
     */
    passagesEmbedded?: number;
    /**
     * Where the model stands now (`reembedRequired` when it needs `confirm`).
     */
    status: EmbeddingStatus;
    /**
     * Pages whose vector came back unusable in this run (NaN or all zero): not stored; the
     * rest of their batch was.
     */
    skipped: SkippedEmbedding[];
    /**
     * Token usage of the embedding calls.
     */
    usage: TokenUsage;
}

/**
 * What [`Wiki::estimate`] returns.
 */
export interface CompileEstimate {
    /**
     * Per source, in compile order.
     */
    sources: SourceEstimate[];
    /**
     * The sum, marked estimated.
     */
    total: TokenUsage;
}

/**
 * What [`Wiki::import_vault`] did.
 */
export interface ImportReport {
    /**
     * What was read.
     */
    kind: VaultKind | undefined;
    /**
     * Pages restored (vault of ours).
     */
    pages: number;
    /**
     * Sources added (notes of a plain vault; or restored).
     */
    sourcesAdded: string[];
    /**
     * Notes whose source already existed with other text.
     */
    sourcesCorrected: string[];
    /**
     * Notes already present with the same text.
     */
    sourcesUnchanged: string[];
    /**
     * Attachments stored.
     */
    assets: string[];
    /**
     * Pages edited, added or deleted in the vault since its export (vault of ours), recorded as
     * human revisions of one `import` operation.
     */
    editedPages: string[];
    /**
     * Files not imported, each with the reason.
     */
    skipped: string[];
    /**
     * The `import` operation, when one was written.
     */
    op: OpId | undefined;
}

/**
 * What [`Wiki::mirror_adopt`] did (JS: `mirrorAdopt(folder)`).
 */
export interface AdoptReport {
    /**
     * Notes added as sources (key = the note's path in the folder).
     */
    sourcesAdded: string[];
    /**
     * Notes whose source existed with other text: corrected.
     */
    sourcesCorrected: string[];
    /**
     * Notes already sources with this text.
     */
    sourcesUnchanged: string[];
    /**
     * Attachments stored (the folder's other files).
     */
    assets: string[];
    /**
     * Files left out, each with the reason.
     */
    skipped: string[];
    /**
     * The `import` operation, when something came in.
     */
    op: OpId | undefined;
}

/**
 * What [`Wiki::mirror_take`] did.
 */
export interface JoinReport {
    /**
     * This device's id.
     */
    device: string;
    /**
     * Its slot in the wiki's operation ids.
     */
    slot: number;
    /**
     * The files of the folder taken as the mirror's own (written by the other devices).
     */
    files: number;
}

/**
 * What [`Wiki::remove_source`] did.
 */
export interface RemoveSourceReport {
    /**
     * The removed source's key.
     */
    key: string;
    /**
     * Its summary page, deleted with it (`None` when it was never compiled).
     */
    summaryPage: string | undefined;
    /**
     * The parts continuing the summary page, deleted with it.
     */
    parts?: string[];
    /**
     * Pages rewritten: claims removed, the source pruned from `sources`, or links to the summary
     * page turned into plain text. Sorted.
     */
    updated: string[];
    /**
     * Ids of the claims removed. Sorted.
     */
    claimsRemoved: string[];
    /**
     * Ids of the open contradictions closed because one side was a removed claim. Sorted.
     */
    contradictionsClosed: string[];
    /**
     * The operation.
     */
    op: OpId;
}

/**
 * What [`crate::wiki::Wiki::add_source`] did.
 */
export type AddOutcome = "added" | "unchanged" | "corrected";

/**
 * What [`crate::wiki::Wiki::rename_page`] did (JS: `renamePage`).
 */
export interface RenameReport {
    /**
     * The page after the rename (its key may have changed).
     */
    page: Page;
    /**
     * The key it had.
     */
    oldKey: string;
    /**
     * Keys of the pages whose links were rewritten.
     */
    rewritten: string[];
    /**
     * The operation.
     */
    op: OpId;
}

/**
 * What [`test_connection`] found.
 */
export interface ConnectionReport {
    /**
     * The provider tested.
     */
    provider: Provider;
    /**
     * The chat URL the real calls use.
     */
    chatUrl: string | undefined;
    /**
     * The model-list URL.
     */
    modelsUrl: string | undefined;
    /**
     * The embeddings URL (`None` for the offline embedding).
     */
    embeddingsUrl: string | undefined;
    /**
     * The page origin the requests came from (what `OLLAMA_ORIGINS` must list).
     */
    origin: string | undefined;
    /**
     * True when plain chat works.
     */
    chatOk: boolean;
    /**
     * True when embeddings work.
     */
    embeddingsOk: boolean;
    /**
     * The steps, in order.
     */
    checks: ConnectionCheck[];
    /**
     * Models the server lists.
     */
    models: string[];
    /**
     * Whether the configured model is in that list (`None` when the list is unavailable).
     */
    modelListed: boolean | undefined;
    /**
     * The structured-output mode that worked.
     */
    structuredMode: StructuredMode | undefined;
    /**
     * The embedding model id and its dimension, when embeddings work.
     */
    embeddingModel: string;
    /**
     * Dimension of the embedding vectors.
     */
    embeddingDimension: number | undefined;
}

/**
 * What `rollback(op)` did (JS: `rollback`).
 */
export interface RollbackReport {
    /**
     * What was undone.
     */
    plan: RollbackPlan;
    /**
     * The rollback operation (kind `rollback`; roll it back to redo).
     */
    operation: Operation;
}

/**
 * What `rollback(op)` would undo (JS: `rollbackPreview`).
 */
export interface RollbackPlan {
    /**
     * The operation asked for.
     */
    op: OpId;
    /**
     * Every operation undone, oldest first: `op` and each later one that wrote a record an undone
     * operation wrote.
     */
    operations: Operation[];
    /**
     * Pages restored, removed or unlinked, by key.
     */
    pages: PageRollback[];
    /**
     * Sources whose record is restored (a compiled source goes back to pending) or removed.
     */
    sources: string[];
    /**
     * Claim records restored or removed.
     */
    claims: number;
    /**
     * Contradiction ledger records restored or removed.
     */
    contradictions: number;
    /**
     * Other records restored: documents (`schema.md`) and settings (`meta/<key>`).
     */
    other: string[];
}

/**
 * What a picked folder holds for joining ([`Wiki::mirror_joinable`]).
 */
export interface JoinCheck {
    /**
     * Whether this wiki holds no operation yet: only such a wiki can join another.
     */
    empty: boolean;
    /**
     * Whether the picked folder is itself a wiki's mirror folder (it holds
     * `.llm-wiki/vault.json`): the person should pick the folder that holds it.
     */
    inside: boolean;
    /**
     * The wikis mirrored in it, by `root`.
     */
    wikis: FolderWiki[];
}

/**
 * What a plain Obsidian vault's template notes become (`importVault(bytes, { templates })`).
 */
export type TemplateNotes = "skip" | "import";

/**
 * What a rollback does to one page.
 */
export type PageAction = "restore" | "remove" | "unlink";

/**
 * What describing pictures did before a compile ([`CompileReport::images`]).
 */
export interface ImagesReport {
    /**
     * Names of the attachments described.
     */
    described: string[];
    /**
     * The attachments that were not, with why (`key` is the attachment's name).
     */
    failed: SourceFailure[];
    /**
     * Tokens the descriptions cost.
     */
    usage: TokenUsage;
}

/**
 * What kind of change an operation made.
 */
export type OperationKind = "add-source" | "remove-source" | "compile" | "write-back" | "fix" | "human-edit" | "rename" | "delete" | "import" | "rollback" | "settings" | "describe";

/**
 * What kind of problem.
 */
export type FindingKind = "orphan" | "broken-link" | "ambiguous-link" | "missing-heading" | "missing-block" | "missing-attachment" | "malformed-link" | "missing-page" | "likely-duplicate" | "merged-names" | "no-sources" | "source-changed" | "source-text-changed" | "stale" | "contradiction" | "index-drift" | "page-too-long" | "possible-contradiction" | "superseded" | "data-gap" | "suggested-question" | "instruction-like";

/**
 * What kind of vault [`Wiki::import_vault`] read.
 */
export type VaultKind = "llmWiki" | "obsidian";

/**
 * What one connection read and wrote, per store (by [`Store::name`]), since it opened.
 */
export interface IoStats {
    /**
     * Per store name (`"pages"`, `"claims"`, …); stores not touched are absent.
     */
    stores: Map<string, StoreIo>;
}

/**
 * What one mirror run did (JS: `mirror(folder)`).
 */
export interface MirrorReport {
    /**
     * The mirror's folder inside the picked one.
     */
    root: string;
    /**
     * The last operation the folder holds now.
     */
    synced: OpId;
    /**
     * Whether the run wrote the whole wiki (the first run, or one that found no undo record
     * to tell what an operation changed).
     */
    whole: boolean;
    /**
     * Files written, by path inside `root`, in the order written (the operation files last).
     */
    written: string[];
    /**
     * Files removed, by path inside `root`.
     */
    removed: string[];
    /**
     * Files the run had to write that already held those bytes (not rewritten).
     */
    unchanged: number;
    /**
     * Files the run left as they are because they changed in the folder since the mirror
     * wrote them, or because the mirror never wrote them: an edit made outside, which the
     * folder keeps until it is read back into the wiki.
     */
    held: string[];
}

/**
 * What one pull did (JS: `mirrorPull(folder)`).
 */
export interface PullReport {
    /**
     * Pages whose file was edited outside: each got a human revision.
     */
    edited: string[];
    /**
     * Pages created from new page files.
     */
    added: string[];
    /**
     * Sources added or corrected from notes dropped into `inbox/`.
     */
    sources: string[];
    /**
     * Inbox files the core does not read (HTML, PDF, images…), by path inside the root: the
     * app converts each, adds it with `addSource` and removes it from the inbox.
     */
    inboxOther: string[];
    /**
     * Pages whose file was deleted outside, to confirm: delete the page, or write its file
     * back (`restorePageFile`). The file is not written again meanwhile.
     */
    deleted: string[];
    /**
     * Pages changed both in the wiki and in the folder since the mirror last wrote them: see
     * `mirrorConflicts`.
     */
    conflicts: string[];
    /**
     * Files left out, each with the reason.
     */
    skipped: string[];
    /**
     * The `import` operation, when something came in.
     */
    op: OpId | undefined;
    /**
     * Files listed.
     */
    listed: number;
    /**
     * Files read (their size or mtime had changed since the last pull).
     */
    read: number;
    /**
     * Other devices' operations applied (merge on read: they came through the folder), in
     * the order applied.
     */
    merged?: OpId[];
}

/**
 * What the LLM checks found (JS: `lint({ llm: true })` adds these findings to the list).
 */
export interface LlmLintReport {
    /**
     * Findings of kinds `possible-contradiction`, `superseded`, `data-gap`, `suggested-question`.
     */
    findings: Finding[];
    /**
     * Groups checked.
     */
    checked: string[][];
    /**
     * Replies rejected (nothing was taken from them).
     */
    rejected: RejectedReply[];
    /**
     * Token usage of every call.
     */
    usage: TokenUsage;
}

/**
 * What the LLM checks would cost, before any call (JS: `lintEstimate`).
 */
export interface LlmLintEstimate {
    /**
     * The page groups that would be checked (page keys), one call each.
     */
    groups: string[][];
    /**
     * Estimated input tokens (Decision 12).
     */
    input: number;
    /**
     * Output tokens at most (calls × output cap).
     */
    output: number;
    /**
     * `input + output`.
     */
    total: number;
}

/**
 * What the compile of one source did.
 */
export interface SourceReport {
    /**
     * Source key.
     */
    key: string;
    /**
     * The compile operation.
     */
    op: OpId;
    /**
     * Pages created.
     */
    created: string[];
    /**
     * Pages updated.
     */
    updated: string[];
    /**
     * Claims stated.
     */
    claims: number;
    /**
     * Claims whose quote was not found in the source.
     */
    unverified: number;
    /**
     * Contradiction records opened.
     */
    contradictions: string[];
    /**
     * Contradictions the model proposed that the app turned away, each with why
     * ([`RejectedContradiction`]).
     */
    contradictionsRejected: RejectedContradiction[];
    /**
     * Pages whose update was held as a proposal (it would have dropped a human edit).
     */
    held: string[];
    /**
     * Pages whose update was asked again, and why (a reply cut at the output limit is asked
     * again in append mode with fewer facts, or with fewer pages per call; the facts left out
     * are listed under `## Facts`, so nothing is lost).
     */
    retried: Retried[];
    /**
     * Token usage.
     */
    usage: TokenUsage;
}

/**
 * What the wiki already says about a text (JS: `recall`).
 */
export interface Recall {
    /**
     * The search query made from the text: its title and the start of its plain body.
     */
    query: string;
    /**
     * The pages about it, best first.
     */
    pages: RecalledPage[];
    /**
     * The open contradiction records of those pages.
     */
    contradictions: OpenContradiction[];
}

/**
 * Where a hit came from and why it scored as it did.
 */
export interface HitExplain {
    /**
     * 1-based rank in the BM25 list.
     */
    bm25Rank: number | undefined;
    /**
     * The BM25 score.
     */
    bm25Score: number | undefined;
    /**
     * 1-based rank in the vector list.
     */
    vectorRank: number | undefined;
    /**
     * Cosine similarity to the query.
     */
    similarity: number | undefined;
    /**
     * The RRF constant used (hybrid only).
     */
    rrfK: number | undefined;
    /**
     * Per-term BM25 breakdown (when `explain` was asked for and the page matched BM25).
     */
    bm25: Bm25Explain | undefined;
}

/**
 * Where a passage is: its source, the version it was cut from, its heading path and lines.
 */
export interface PassageMeta {
    /**
     * The source key.
     */
    source: string;
    /**
     * The source version (SHA-256 of its text) the passage was cut from.
     */
    version: string;
    /**
     * Heading path, outermost first, joined by " › " ("" before the first heading).
     */
    heading: string;
    /**
     * 1-based inclusive line range in the source text.
     */
    lines: [number, number];
}

/**
 * Where a source is in the compile pipeline.
 */
export type SourceStatus = { state: "pending" } | { state: "compiled"; op: OpId; version: string } | { state: "failed"; reason: string; code: string };

/**
 * Where embeddings stand for a configured model (see [`SearchIndex::embedding_status`]).
 */
export type EmbeddingStatus = { state: "ready"; missing: number } | { state: "noVectors" } | { state: "reembedding"; done: number; total: number } | { state: "reembedRequired"; storedModel: string; storedDim: number };

/**
 * Where the active vectors stand (JS `vectorIndexStatus()`).
 */
export interface VectorIndexStatus {
    /**
     * The embedding model of the active vectors.
     */
    model: string;
    /**
     * Their dimension.
     */
    dim: number;
    /**
     * Pages with a searchable (non-null) vector.
     */
    rows: number;
    /**
     * True when an HNSW graph serves the base rows (else every search is an exact scan).
     */
    graph: boolean;
    /**
     * The graph's calibrated `ef_search`, when there is a graph.
     */
    efSearch: number | undefined;
    /**
     * Rows added or changed since the last rebuild (scanned exactly beside the graph).
     */
    delta: number;
    /**
     * Base rows replaced or removed since the last rebuild.
     */
    dead: number;
    /**
     * Live rows when the last graph build was given up (too slow or too low recall), if it was.
     */
    declinedAt: number | undefined;
    /**
     * True when [`Wiki::vector_rebuild_job`] would return a job.
     */
    needsRebuild: boolean;
    /**
     * This connection's [`VectorIndexOptions::min_rows`].
     */
    minRows: number;
}

/**
 * Whether [`build_graph`] kept its graph, and if not why.
 */
export type GraphVerdict = "kept" | "lowRecall" | "notCheaper";

/**
 * Which collection a search hit is from.
 */
export type HitKind = "page" | "passage";

/**
 * Which embedding API to call (field case F14), or the built-in offline embedding.
 */
export type EmbeddingProvider = "offline" | "openai" | "ollama" | "ollama-legacy";

/**
 * Which protocol the chat endpoint speaks (Decision 11: an enum, the core is generic, not `dyn`).
 */
export type Provider = "openai-compatible" | "ollama" | "anthropic" | "offline";

/**
 * Which ranking a search uses.
 */
export type SearchMode = "bm25" | "vector" | "hybrid";

/**
 * Who routes a question to pages ([`AskOptions::router`]).
 */
export type Router = "auto" | "model" | "search";

/**
 * Who wrote a revision.
 */
export type Author = "llm" | "human" | "app";

/**
 * Why a page got its BM25 score.
 */
export interface Bm25Explain {
    /**
     * The sum of the contributions.
     */
    score: number;
    /**
     * `N`, the document count used by idf.
     */
    docCount: number;
    /**
     * Average field lengths over live documents: `[title, aliases, body]`.
     */
    avgLen: [number, number, number];
    /**
     * The parameters.
     */
    params: Bm25Params;
    /**
     * One entry per distinct query term found in the page.
     */
    terms: TermExplain[];
}

/**
 * Why a page's update was asked again.
 */
export type RetryReason = "truncated";

/**
 * Why a page's vector was not stored.
 */
export type BadVector = "not-finite" | "zero";

/**
 * Why a proposed contradiction opened no record. A record opens only when both claims are
 * asserted, both quotes occur verbatim in their own sources, and both claims are on one page.
 */
export type RejectReason = "unknown-claim" | "same-source" | "quote-not-in-source" | "unverified-existing" | "no-such-claim" | "not-asserted" | "existing-not-asserted" | "different-pages";

/**
 * Why a search returned what it did (besides the hits).
 */
export type SearchStatus = { state: "ok" } | { state: "reembedRequired"; storedModel: string; storedDim: number; configuredModel: string; configuredDim: number } | { state: "reembedding"; model: string; done: number; total: number } | { state: "noVectors" } | { state: "noQueryVector" } | { state: "nullQueryVector" };

/**
 * [`Wiki::embedding_status`]: where the configured model stands, and the pages whose last
 * vector came back unusable (still without one).
 */
export interface EmbeddingState extends EmbeddingStatus {
    /**
     * Pages whose vector from the configured model came back unusable, still without one.
     */
    skipped?: SkippedEmbedding[];
}


/**
 * A personal wiki stored in this browser's IndexedDB.
 *
 * It keeps sources (immutable, content-addressed), pages written by the LLM and by you (with
 * append-only revisions), index.md, log.md and schema.md. It is not responsible for converting
 * HTML or PDF (do that in JS first, see `www/src/convert.js`) or for talking to other tabs beyond the
 * IndexedDB `versionchange` protocol.
 *
 * @example
 * ```ts
 * import init, { Wiki } from "./pkg/llm_wiki.js";
 * await init();
 * const wiki = await Wiki.open("research");
 * const r = await wiki.addSource({ title: "Notes", mime: "text/markdown", content: "# Notes\n..." });
 * console.log(r.outcome, (await wiki.sources()).length);
 * ```
 */
export class Wiki {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Accepts the held update of a page: it becomes the next revision, in one operation.
     * Resolves to the operation id. Throws `NOT_FOUND`, `CONFLICT`.
     */
    acceptProposal(key: string): Promise<number>;
    /**
     * Stores an attachment (image or file) under `raw/assets/`, content-addressed; `![[name]]`
     * and `![](name)` then show it. Same name and bytes again: the existing record, nothing
     * written. Throws `INVALID_INPUT` for empty bytes.
     */
    addAttachment(name: string, mime: string, bytes: Uint8Array | number[]): Promise<Asset>;
    /**
     * Adds a source. Same key and same content: a no-op reported as `outcome: "unchanged"`;
     * same key, new content: `"corrected"`. Throws `UNSUPPORTED_MIME` for anything but
     * `text/markdown` and `text/plain`.
     */
    addSource(input: NewSource): Promise<AddSourceReport>;
    /**
     * Applies the fix of a current lint finding, as one operation. For a contradiction, `note`
     * says how it was settled and `scoped: true` keeps both claims (status `scoped`).
     */
    applyFix(id: string, options: { note?: string, scoped?: boolean } | undefined): Promise<Operation>;
    /**
     * The pages as they were right after operation `opId` (0: before the first), read from the
     * revisions. Throws `NOT_FOUND` for an operation later than the last.
     */
    asOf(op: number): Promise<PageInfo[]>;
    /**
     * Answers a question from the wiki, citing its pages as `[[key]]` (every citation names a
     * page the answer was given; others are removed and listed in `removedCitations`). Streams
     * the answer to `onToken`. With `writeBack: true` the answer is saved as an `analysis` page
     * (`saved`); `worthSaving` says whether it cites two or more pages. With no endpoint the
     * answer is extractive (`extractive: true`) and says so.
     *
     * With `writeBack` it commits a page: an app with several writers (tabs, an extension) calls
     * it under its write lock, as `www/app.js` does (Decision 9). Without, it writes no wiki
     * content, only the cache of what the endpoint accepted (`meta/llm-learned`, an optimistic
     * write whose conflict is ignored), so it need not wait for the lock.
     */
    ask(question: string, request: AskRequest | undefined): Promise<Answer>;
    /**
     * The bytes of the attachment with this SHA-256, or `undefined`.
     */
    asset(sha256: string): Promise<Uint8Array | undefined>;
    /**
     * Every attachment, ordered by name.
     */
    assets(): Promise<Asset[]>;
    /**
     * Keys of the pages linking to `key`, sorted.
     */
    backlinks(key: string): Promise<string[]>;
    /**
     * Closes the connection. Later calls throw `CLOSED`.
     */
    close(): void;
    /**
     * Compiles every new or changed source (or `sources`) into pages, one operation per source,
     * with the configured endpoint; with the `offline` provider (the default) it runs the
     * extractive compiler. Resolves with a
     * report; a source that fails is listed in `failed` and stays pending, the wiki unchanged by
     * it. Rejects with `CANCELLED` when `signal` aborts (committed sources stay).
     */
    compile(request: CompileRequest | undefined): Promise<CompileReport>;
    /**
     * The LLM settings without secrets: `hasApiKey` and `secretHeaderNames` say what is stored.
     * A wiki that was never configured is offline.
     */
    config(): Promise<ConfigView>;
    /**
     * Deletes a page; every link to it becomes plain text, in one operation. Throws `NOT_FOUND`,
     * `CONFLICT`.
     */
    deletePage(key: string): Promise<DeleteReport>;
    /**
     * Deletes the wiki `name` and everything in it. Open connections (other tabs too) close.
     */
    static delete(name: string): Promise<void>;
    /**
     * Asks the configured compile model to describe the picture of attachment `name`, and
     * keeps the description with it (`Asset.description`: text, model, time), replacing an
     * earlier one, in one operation. The source text is untouched; the next compile of a
     * source that shows the picture sees it, and claims drawn from it cite the picture and are
     * never verified. `signal` cancels (`CANCELLED`, nothing stored). Throws `NOT_FOUND`,
     * `UNSUPPORTED_MIME` (not PNG, JPEG, WebP or GIF), `INVALID_INPUT` (over 5 MB),
     * `LLM_CONFIG` (the offline provider), and the endpoint's errors (`LLM_REJECTED` from a
     * model that reads text only).
     */
    describeAttachment(name: string, options: { signal?: AbortSignal } | undefined): Promise<Asset>;
    /**
     * This browser's device id for the wiki: 10 characters (`[0-9a-z]`, Crockford's base32),
     * made on first use and kept locally; never exported, so a wiki imported into another
     * browser gets its own. Several devices keeping one folder tell their writes apart by it.
     */
    deviceId(): Promise<string>;
    /**
     * Embeds the pages that lack a vector of the configured embedding model, in batches saved
     * as they land (an interrupted run resumes). With vectors of another model stored, nothing
     * happens unless `confirm: true`; then search uses BM25 until the new vectors are
     * complete and replace the old ones in one step. Throws the endpoint's `LLM_*` errors, `CANCELLED`.
     */
    embedPages(request: EmbedRequest | undefined): Promise<EmbedReport>;
    /**
     * Where the configured embedding stands: `{state: "ready", missing}`, `{state:
     * "noVectors"}`, `{state: "reembedding", done, total}` or `{state: "reembedRequired",
     * storedModel, storedDim}` (search runs on BM25 until `embedPages({confirm: true})`).
     */
    embeddingStatus(): Promise<EmbeddingState>;
    /**
     * The token cost a `compile()` with these options would have, per source and in total, with
     * the configured compile model's settings and what its replies showed (0 for the offline
     * provider). Sends nothing.
     */
    estimate(request: CompileRequest | undefined): Promise<CompileEstimate>;
    /**
     * The files changed since the last call, as zip bytes to unzip over a folder, for browsers
     * without a directory picker: the first call gives the whole wiki in the mirror's folder
     * layout under `llm-wiki/`, each later one only what the operations since changed, in the
     * same layout; files to delete are listed in `llm-wiki/.llm-wiki/removed.txt`.
     * `fromStart`: forget what earlier downloads held and give the whole wiki again.
     */
    exportChanges(from_start?: boolean | null): Promise<Uint8Array>;
    /**
     * The whole wiki as a zip (the vault layout: `wiki/<kind>/<key>.md`, `raw/`, `index.md`,
     * `log.md`, `schema.md`, `.llm-wiki/`), never containing an API key. The same wiki always
     * gives the same bytes.
     */
    exportVault(): Promise<Uint8Array>;
    /**
     * How many notes (`.md`) `folder` holds outside the mirror's folder and hidden folders:
     * more than none means the person picked a vault the app can adopt (`mirrorAdopt`).
     */
    folderNotes(folder: FileSystemDirectoryHandle): Promise<number>;
    /**
     * Stops mirroring: forgets what was written, and any conflict or deleted page file waiting
     * for a choice (the folder's files stay, so nothing is lost). The next `mirror` starts a
     * new mirror in a free folder (`llm-wiki 2`… when `llm-wiki` holds files).
     */
    forgetMirror(): Promise<void>;
    /**
     * Every page (`{ key, title, kind, tags, sources }`, sorted by key) and every link between two pages
     * (`{ from, to }`, resolved like the page view's links; missing and ambiguous targets are left
     * out), for a graph view.
     */
    graph(): Promise<WikiGraph>;
    /**
     * A page's revisions, oldest first, each with `diff` (a unified line diff of the page file —
     * frontmatter and body — against the revision before, empty when unchanged), `added` and
     * `removed` (line counts).
     */
    history(key: string): Promise<HistoryEntry[]>;
    /**
     * Imports a zip: a vault exported by llm-wiki is restored exactly (into an empty wiki only);
     * a plain Obsidian vault's notes come in as sources and its other files as attachments. Of
     * its notes, an Excalidraw drawing gives only its text, and a template is skipped unless
     * `options.templates` is `"import"`; `skipped` lists what was left out and why.
     * Throws `INVALID_INPUT` (damaged zip, non-empty wiki, hash mismatch), `QUOTA_EXCEEDED`.
     */
    importVault(bytes: Uint8Array | number[], options: Partial<ImportOptions> | undefined): Promise<ImportReport>;
    /**
     * index.md (generated by the app from the page store).
     */
    index(): Promise<string>;
    /**
     * Installs what `buildHnswGraph` returned for job `jobId` (`bytes`, or `null` when the
     * build gave the graph up) and saves the vector index; call it under the wiki's write lock.
     * Vectors changed while the graph was built stay correct (they are scanned exactly until the
     * next rebuild). Resolves to `"installed"`, or `"stale"` (nothing written) for a job that is
     * not the latest or whose vectors were rebuilt meanwhile. Throws `INVALID_INPUT` for bytes
     * that are not a graph over the job's rows, storage errors.
     */
    installVectorGraph(job_id: number, bytes?: Uint8Array | number[] | null): Promise<"installed" | "stale">;
    /**
     * What this connection has read and written since it opened, per store:
     * `{ stores: { pages: { reads, readBytes, writes, writtenBytes, deletes }, … } }` (records
     * and bytes). Take it before and after a call to see what the call cost: a compile reads
     * the bodies (`pages` records) of the pages it changes, a question those it answers from.
     */
    ioStats(): IoStats;
    /**
     * What `lint({ llm: true })` would cost, before any call: `{ groups, input, output, total }`
     * tokens (Decision 12 estimate; `groups` are the page groups, one call each).
     */
    lintEstimate(options: Partial<LlmLintOptions> | undefined): Promise<LlmLintEstimate>;
    /**
     * Checks the wiki's health: findings (id, kind, severity, page, related, message, fix) sorted
     * by severity. Apply a finding's fix with `applyFix(id)`.
     *
     * With `llm: true` the LLM checks run first with the lint model (contradictions between pages
     * that share an entity, superseded claims, gaps, suggested questions; call `lintEstimate`
     * before, they cost tokens); their findings stay listed by later `lint()` calls until the
     * next LLM run. `signal` cancels them (`CANCELLED`). Throws `LLM_CONFIG` with no endpoint, and
     * every LLM error but `LLM_BAD_OUTPUT` (a reply still malformed after its repair is left out).
     * With `llm: true` it writes (the findings, and what the endpoint accepted): call it under
     * the app's write lock, as `www/app.js` does (Decision 9).
     */
    lint(options: (Partial<LintOptions> & Partial<LlmLintOptions> & { llm?: boolean, signal?: AbortSignal }) | undefined): Promise<Finding[]>;
    /**
     * Names of the wikis in this origin, sorted.
     */
    static list(): Promise<string[]>;
    /**
     * log.md (append-only).
     */
    log(): Promise<string>;
    /**
     * Adopts the picked folder (an Obsidian vault): its notes outside the mirror's folder
     * become sources and its other files attachments, as `importVault` would make them, in one
     * operation. `options.templates`: `"skip"` (default) or `"import"`. Throws `FOLDER`.
     */
    mirrorAdopt(folder: FileSystemDirectoryHandle, options: Partial<ImportOptions> | undefined): Promise<AdoptReport>;
    /**
     * The pages changed both in the wiki and in the folder, each with the folder's text.
     */
    mirrorConflicts(): Promise<MirrorConflict[]>;
    /**
     * Makes this browser one more device of the wiki another device mirrors in
     * `folder`/`root` (issue #25): this empty wiki takes a device slot no other device there
     * has, imports the folder's wiki, and takes the folder as its mirror, so later runs write
     * only its own files (`.llm-wiki/devices/<device>/`) and `mirrorPull` merges the others'
     * operations. A join cut short resumes: call it again. Throws `INVALID_INPUT` (no wiki
     * in `root`, or this wiki holds operations of its own), `FOLDER`, `QUOTA_EXCEEDED`.
     */
    mirrorJoin(folder: FileSystemDirectoryHandle, root: string): Promise<JoinReport>;
    /**
     * Which wikis the picked `folder` holds (in `llm-wiki`, `llm-wiki 2` … `llm-wiki 9`), and
     * whether this wiki may join one (`empty`). Ask it before the first `mirror` into a
     * picked folder: a wiki there that is not `own` is another device's, to join
     * (`mirrorJoin`) from an empty wiki rather than mirror beside. Throws `FOLDER`.
     */
    mirrorJoinable(folder: FileSystemDirectoryHandle): Promise<JoinCheck>;
    /**
     * Brings what changed in the mirror's folder outside the app into the wiki, as one
     * `import` operation: edited page files become human revisions, new ones pages, notes
     * dropped into `inbox/` sources (other inbox files are listed in `inboxOther` for the app
     * to convert and add). A page changed on both sides is listed in `conflicts`, a page file
     * deleted outside in `deleted`; neither is applied. Call it when `FileSystemObserver`
     * reports a change, else on focus and at most every 10 s while visible.
     * Throws `INVALID_INPUT` (no mirror in `root`), `FOLDER`.
     */
    mirrorPull(folder: FileSystemDirectoryHandle, root?: string | null): Promise<PullReport>;
    /**
     * The mirror's state (`root`, the operation the folder holds, how many it is behind,
     * whether a run was cut short), or `undefined` when this wiki has no mirror here.
     */
    mirrorStatus(): Promise<MirrorStatus | undefined>;
    /**
     * Brings the mirror in `folder` (a `FileSystemDirectoryHandle`: a picked directory or the
     * origin-private file system) up to date: the first time the whole wiki, in its folder
     * layout under `root` (default: the last run's, else the first free of `"llm-wiki"`,
     * `"llm-wiki 2"`…), then only the files the operations since
     * changed. Call it after each operation, in the tab holding the wiki's write lock. Files
     * changed in the folder since the mirror wrote them are left as they are (`held`).
     * Throws `INVALID_INPUT` (a first run into a `root` given explicitly that holds files), `FOLDER` (no
     * permission, folder gone, disk full: the wiki is unchanged and the next call resumes).
     */
    mirror(folder: FileSystemDirectoryHandle, root?: string | null): Promise<MirrorReport>;
    /**
     * The open records of the contradiction ledger (Decision 4) that involve any of `keys`
     * (exact page keys), each once, in the order of `keys`: `{ id, description, pages, sides }`,
     * each side a claim with the page stating it (`{ claim, page, title, text }`). Read from the
     * ledger itself, not from the `> [!contradiction]` callouts the pages show.
     */
    openContradictions(keys: string[]): Promise<OpenContradiction[]>;
    /**
     * Opens the wiki `name`, creating it on first use (with schema.md, index.md and log.md).
     * Throws `UPGRADE_BLOCKED` when another tab holds an older version open, `SCHEMA_TOO_NEW`,
     * `STORAGE_UNAVAILABLE` (IndexedDB cannot be used here and `memoryFallback` is not set),
     * `QUOTA_EXCEEDED` or `INVALID_INPUT` (bad name).
     */
    static open(name: string, options: OpenWikiOptions | undefined): Promise<Wiki>;
    /**
     * Every operation, oldest first.
     */
    operations(): Promise<Operation[]>;
    /**
     * One page as it was right after operation `opId` (exact key, then case-insensitive), or
     * `undefined`.
     */
    pageAsOf(key: string, op: number): Promise<Page | undefined>;
    /**
     * A page rendered for reading: `{ page, html, backlinks, assets, missing, ambiguous,
     * malformed }`, or `undefined`. The HTML is safe to assign to `innerHTML`: no raw HTML,
     * handlers or script URLs survive, and nothing in it makes the browser fetch a URL.
     * Wikilinks are `<a class="wikilink" href="#/page/<key>" data-page="<key>">`; missing ones
     * are `<span class="wikilink missing">`. Attachment images are `<img data-asset="<sha256>">`
     * without `src`: load the bytes with `asset(sha256)` and set a `blob:` URL.
     */
    pageView(key: string): Promise<PageView | undefined>;
    /**
     * One page, or `undefined`; the key matches exactly, else case-insensitively.
     */
    page(key: string): Promise<Page | undefined>;
    /**
     * One line per page, ordered by key.
     */
    pages(): Promise<PageInfo[]>;
    /**
     * Asks the browser to make storage persistent (`navigator.storage.persist()`); resolves to
     * whether it is. The request is made before this returns, so a call inside a click or drop
     * handler carries that user gesture. Headless browsers and some settings answer `false`
     * without a prompt; a wiki kept in memory (`memoryFallback`) always answers `false`.
     */
    persist(): Promise<boolean>;
    /**
     * Starting points for the settings screen: OpenAI, Ollama (OpenAI-compatible `/v1`), Ollama
     * native API, LM Studio, llama.cpp server, vLLM, Anthropic, offline.
     */
    static presets(): Preset[];
    /**
     * What waits beside a page for the person's choice: the compile updates held because they
     * would drop a human's paragraphs (`kind: "update"`, Decision 5), then the pages changed
     * both here and in the mirror's folder (`kind: "conflict"`, issue #24), each group by page
     * key. A conflict is never stale: it ends only by `resolveMirrorConflict`.
     */
    proposals(): Promise<Proposal[]>;
    /**
     * A human edit: creates (no `key`) or updates a page as a new revision. Throws `CONFLICT` when
     * `baseRevision` is stale.
     */
    putPage(edit: PageEdit): Promise<Page>;
    /**
     * What the wiki already says about a text the user is reading (a page to clip: its `title`
     * and `markdown`): the pages matching its title and the start of its body by BM25, with
     * their one-line summaries, and the open contradictions on them. A page counts only when it
     * shares enough topic terms with the text (`minTerms`, default 3 — function words, single
     * characters and numbers are not topic terms) and scores at least `minShare` (default 0.3)
     * of the best hit; `k` (default 6) caps the list, `chars` (default 600) the body's share of
     * the query.
     */
    recall(title: string, markdown: string, options: Partial<RecallOptions> | undefined): Promise<Recall>;
    /**
     * Rejects the held update of a page: the page stays as it is. Throws `NOT_FOUND`.
     */
    rejectProposal(key: string): Promise<void>;
    /**
     * Removes a source in one operation: its summary page, its claims (and the lines citing
     * them), its place in every page's `sources`, links to its summary page (now plain text);
     * contradictions resting on its claims are closed. No model call. Throws `NOT_FOUND`,
     * `CONFLICT`.
     */
    removeSource(key: string): Promise<RemoveSourceReport>;
    /**
     * Renames a page (new title, and the key it gives) and rewrites every link to it, in one
     * operation. Throws `NOT_FOUND`, `INVALID_INPUT` (empty title), `CONFLICT`.
     */
    renamePage(key: string, title: string): Promise<RenameReport>;
    /**
     * Renders markdown — an answer of `ask()`, a line of the app's own text — the way
     * `pageView` renders a page body: the same sanitising (the HTML is safe to assign to
     * `innerHTML`, nothing in it fetches a URL), and wikilinks resolved against this wiki's
     * pages (`<a class="wikilink" href="#/page/<key>" data-page="<key>">`; a target that names
     * no page is `<span class="wikilink missing">`). Resolves to `{ html, assets, missing,
     * ambiguous, malformed }`.
     *
     * @example
     * ```ts
     * const answer = await wiki.ask("What is backpressure?");
     * element.innerHTML = (await wiki.renderMarkdown(answer.answer)).html;
     * ```
     */
    renderMarkdown(markdown: string): Promise<MarkdownView>;
    /**
     * Ends a conflict: `{ keep: "mine" }` writes the wiki's version over the file,
     * `{ keep: "theirs" }` or `{ keep: "merge", text }` makes that text the page's next
     * revision (resolves to its operation id). `seen` is the conflict's `theirs` the person
     * decided on. Throws `NOT_FOUND`, `INVALID_INPUT` (the folder's version changed since it
     * was shown: list the conflicts again), `FOLDER`.
     */
    resolveMirrorConflict(folder: FileSystemDirectoryHandle, key: string, choice: ConflictChoice, seen: string): Promise<number | undefined>;
    /**
     * Writes the file of page `key` back into the folder after it was deleted there (to delete
     * the page instead, `deletePage`). Throws `NOT_FOUND`, `FOLDER`.
     */
    restorePageFile(folder: FileSystemDirectoryHandle, key: string): Promise<void>;
    /**
     * Restores a page to an earlier revision, as a new revision (history is kept).
     */
    revert(key: string, revision: number): Promise<Page>;
    /**
     * What `rollback(opId)` would undo, writing nothing: the operations (`opId` and every later
     * one that changed the same pages, sources, claims or records), the pages restored, removed
     * or unlinked, the sources, and counts of claims and ledger records. Throws `NOT_FOUND` for
     * an unknown operation or one without an undo record (vault imports), `INVALID_INPUT` when it
     * was already rolled back.
     */
    rollbackPreview(op: number): Promise<RollbackPlan>;
    /**
     * Undoes operation `opId` and every later one that touched the same records (see
     * `rollbackPreview`), in one `rollback` operation: pages, sources, claims, ledger, index.md
     * and the search index. History is kept; roll the rollback back to redo.
     *
     * @example
     * ```ts
     * const plan = await wiki.rollbackPreview(12);
     * if (confirm(`Undo ${plan.operations.length} operations?`)) await wiki.rollback(12);
     * ```
     */
    rollback(op: number): Promise<RollbackReport>;
    /**
     * Saves an answer `ask()` returned as an `analysis` page (the same as `writeBack: true`).
     * Throws `UNGROUNDED` for an answer with `grounded: false` (declined, or citing no page).
     */
    saveAnswer(question: string, answer: Answer): Promise<Page>;
    /**
     * schema.md, the conventions the compile prompts follow.
     */
    schema(): Promise<string>;
    /**
     * Searches the pages. `options`: `k` (default 10), `mode` `"bm25"` | `"vector"` |
     * `"hybrid"` (default), `queryVector` `{ model, vector }` for the vector modes, `depth`,
     * `explain`, `passages` (default false: with true, up to `k` source-passage hits follow the
     * page hits). Each hit has `key`, `kind` (`"page"` | `"passage"`), `score` and `explain`
     * (ranks, BM25 per-term breakdown, similarity); a passage hit also `source`, `version`,
     * `heading` and `lines` (`[first, last]`, 1-based; open them with `sourceSpan`); `status` says why vectors did not serve (e.g. `{ state: "reembedRequired",
     * storedModel, storedDim, configuredModel, configuredDim }`), and `mode` what was used.
     *
     * @example
     * ```ts
     * const r = await wiki.search("明月", { k: 5, mode: "bm25" });
     * r.hits.map((h) => h.key);
     * ```
     */
    search(text: string, options: Partial<SearchOptions> | undefined): Promise<SearchResults>;
    /**
     * Saves the LLM settings (one `settings` operation in log.md; never the key). An absent
     * `apiKey` keeps the stored key, `""` removes it; extra headers whose name looks secret
     * (`Authorization`, `*key*`, `*token*`…) are stored like the key. Throws `LLM_CONFIG` for
     * invalid settings (nothing is written).
     *
     * @example
     * ```ts
     * const [ollama] = Wiki.presets().filter(p => p.id === "ollama");
     * await wiki.setConfig({ ...ollama.config, model: "qwen2.5:7b" });
     * ```
     */
    setConfig(config: ConfigInput): Promise<Operation>;
    /**
     * Replaces schema.md.
     */
    setSchema(text: string): Promise<Operation>;
    /**
     * The sources whose current text holds instruction-like phrases ("ignore previous
     * instructions", "you are now…", 忽略之前的指令…), ordered by key: a flag to show beside
     * them. Such text was compiled as data, not followed; nothing compiled changes because of it.
     */
    sourceFlags(): Promise<SourceFlag[]>;
    /**
     * Lines `first`–`last` (1-based, inclusive) of source `key` at `version` (the current one
     * when `undefined`), or `undefined` when there is no such source: what a passage hit or a
     * source citation points at. `{ key, title, version, current, lines, totalLines, text }`.
     *
     * @example
     * ```ts
     * const hit = (await wiki.search("Fresnel", { passages: true })).hits.find((h) => h.kind === "passage");
     * if (hit && hit.source && hit.lines) {
     *   const span = await wiki.sourceSpan(hit.source, hit.version, hit.lines[0], hit.lines[1]);
     *   span?.text;
     * }
     * ```
     */
    sourceSpan(key: string, version: string | undefined, first: number, last: number): Promise<SourceSpan | undefined>;
    /**
     * One source with its text, or `undefined`.
     */
    source(key: string): Promise<SourceWithText | undefined>;
    /**
     * Every source, ordered by key.
     */
    sources(): Promise<Source[]>;
    /**
     * Storage usage and quota of this origin, whether it is persistent, and where this wiki is
     * kept (`backend`). A wiki kept in memory (`memoryFallback`) reports `{ persisted: false,
     * backend: "memory" }` and no figures.
     */
    storageInfo(): Promise<StorageInfo>;
    /**
     * Tests the LLM settings (stored, or `options.config`) with the same URLs and requests the
     * real calls use: the model list (reachability, CORS, key), a plain and a streamed chat, a
     * structured call (which JSON mode the endpoint takes; remembered), and embeddings. Never
     * throws for endpoint problems: each step reports `ok`, `failed` (with an error `code`) or
     * `skipped`. An `LLM_ORIGIN_NOT_ALLOWED` step names the exact `OLLAMA_ORIGINS` value.
     * It may store what the endpoint accepted (`meta/llm-learned`, a cache written with an
     * optimistic check whose conflict is ignored): no write lock needed.
     */
    testConnection(options: TestConnectionOptions | undefined): Promise<ConnectionReport>;
    /**
     * Where the active vectors stand: `{ model, dim, rows, graph, efSearch, delta, dead,
     * declinedAt, needsRebuild, minRows }` — `graph` true when an HNSW graph serves searches
     * (else the exact scan), `declinedAt` the vector count at which the last graph build was
     * given up. `undefined` when no page has a vector.
     */
    vectorIndexStatus(): Promise<VectorIndexStatus | undefined>;
    /**
     * A graph rebuild to run off the main thread, or `null` when none is due (fewer vectors
     * than `minRows` — 10 000 by default —, a graph that is current, or a build given up since
     * the vectors last grew by half). Pass `vectors`, `dim`, `params` and `options` to
     * `buildHnswGraph` in a Web Worker (`www/hnsw-worker.js`), then the bytes to
     * `installVectorGraph(jobId, bytes)`. Only the latest job can be installed. Writes nothing.
     *
     * @example
     * ```ts
     * const job = await wiki.vectorRebuildJob();
     * if (job) {
     *   const r = buildHnswGraph(job.vectors, job.dim, job.params, job.options); // in a worker
     *   await wiki.installVectorGraph(job.jobId, r.bytes);
     * }
     * ```
     */
    vectorRebuildJob(): Promise<VectorRebuildJob | null>;
    /**
     * True once the connection closed (`close()`, another tab's upgrade, or deletion).
     */
    readonly closed: boolean;
    /**
     * The wiki's name.
     */
    readonly name: string;
}

/**
 * Builds and calibrates an HNSW graph over `vectors` (`rows × dim` normalised floats, row after
 * row — `vectorRebuildJob().vectors`): the Web Worker side of a vector rebuild
 * (`www/hnsw-worker.js`). Pure and synchronous (seconds per 10 000 rows of 384-d: call it in a
 * worker, never on the page's thread). Returns `{ bytes, efSearch, recall, evaluations, rows,
 * verdict }`; `bytes` is `null` when the graph was given up: recall@10 below 0.95 on the
 * calibration sample at every `efSearch` up to 800 (`"lowRecall"`), or not predicted cheaper
 * than the exact scan (`"notCheaper"`, unless `options.requireCheaper` is false). Throws
 * `INVALID_INPUT` when `dim` is 0 or does not divide `vectors.length`, or for bad `params`.
 */
export function buildHnswGraph(vectors: Float32Array | number[], dim: number, params: Partial<HnswParams> | undefined, options: Partial<GraphBuildOptions> | undefined): GraphBuildResult;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_wiki_free: (a: number, b: number) => void;
    readonly buildHnswGraph: (a: number, b: number, c: number, d: any, e: any) => [number, number, number];
    readonly wiki_acceptProposal: (a: number, b: number, c: number) => any;
    readonly wiki_addAttachment: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => any;
    readonly wiki_addSource: (a: number, b: any) => any;
    readonly wiki_applyFix: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_asOf: (a: number, b: number) => any;
    readonly wiki_ask: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_asset: (a: number, b: number, c: number) => any;
    readonly wiki_assets: (a: number) => any;
    readonly wiki_backlinks: (a: number, b: number, c: number) => any;
    readonly wiki_close: (a: number) => void;
    readonly wiki_closed: (a: number) => number;
    readonly wiki_compile: (a: number, b: any) => any;
    readonly wiki_config: (a: number) => any;
    readonly wiki_delete: (a: number, b: number) => any;
    readonly wiki_deletePage: (a: number, b: number, c: number) => any;
    readonly wiki_describeAttachment: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_deviceId: (a: number) => any;
    readonly wiki_embedPages: (a: number, b: any) => any;
    readonly wiki_embeddingStatus: (a: number) => any;
    readonly wiki_estimate: (a: number, b: any) => any;
    readonly wiki_exportChanges: (a: number, b: number) => any;
    readonly wiki_exportVault: (a: number) => any;
    readonly wiki_folderNotes: (a: number, b: any) => any;
    readonly wiki_forgetMirror: (a: number) => any;
    readonly wiki_graph: (a: number) => any;
    readonly wiki_history: (a: number, b: number, c: number) => any;
    readonly wiki_importVault: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_index: (a: number) => any;
    readonly wiki_installVectorGraph: (a: number, b: number, c: number, d: number) => any;
    readonly wiki_ioStats: (a: number) => [number, number, number];
    readonly wiki_lint: (a: number, b: any) => any;
    readonly wiki_lintEstimate: (a: number, b: any) => any;
    readonly wiki_list: () => any;
    readonly wiki_log: (a: number) => any;
    readonly wiki_mirror: (a: number, b: any, c: number, d: number) => any;
    readonly wiki_mirrorAdopt: (a: number, b: any, c: any) => any;
    readonly wiki_mirrorConflicts: (a: number) => any;
    readonly wiki_mirrorJoin: (a: number, b: any, c: number, d: number) => any;
    readonly wiki_mirrorJoinable: (a: number, b: any) => any;
    readonly wiki_mirrorPull: (a: number, b: any, c: number, d: number) => any;
    readonly wiki_mirrorStatus: (a: number) => any;
    readonly wiki_name: (a: number) => [number, number];
    readonly wiki_open: (a: number, b: number, c: any) => any;
    readonly wiki_openContradictions: (a: number, b: number, c: number) => any;
    readonly wiki_operations: (a: number) => any;
    readonly wiki_page: (a: number, b: number, c: number) => any;
    readonly wiki_pageAsOf: (a: number, b: number, c: number, d: number) => any;
    readonly wiki_pageView: (a: number, b: number, c: number) => any;
    readonly wiki_pages: (a: number) => any;
    readonly wiki_persist: (a: number) => any;
    readonly wiki_presets: () => [number, number, number];
    readonly wiki_proposals: (a: number) => any;
    readonly wiki_putPage: (a: number, b: any) => any;
    readonly wiki_recall: (a: number, b: number, c: number, d: number, e: number, f: any) => any;
    readonly wiki_rejectProposal: (a: number, b: number, c: number) => any;
    readonly wiki_removeSource: (a: number, b: number, c: number) => any;
    readonly wiki_renamePage: (a: number, b: number, c: number, d: number, e: number) => any;
    readonly wiki_renderMarkdown: (a: number, b: number, c: number) => any;
    readonly wiki_resolveMirrorConflict: (a: number, b: any, c: number, d: number, e: any, f: number, g: number) => any;
    readonly wiki_restorePageFile: (a: number, b: any, c: number, d: number) => any;
    readonly wiki_revert: (a: number, b: number, c: number, d: number) => any;
    readonly wiki_rollback: (a: number, b: number) => any;
    readonly wiki_rollbackPreview: (a: number, b: number) => any;
    readonly wiki_saveAnswer: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_schema: (a: number) => any;
    readonly wiki_search: (a: number, b: number, c: number, d: any) => any;
    readonly wiki_setConfig: (a: number, b: any) => any;
    readonly wiki_setSchema: (a: number, b: number, c: number) => any;
    readonly wiki_source: (a: number, b: number, c: number) => any;
    readonly wiki_sourceFlags: (a: number) => any;
    readonly wiki_sourceSpan: (a: number, b: number, c: number, d: number, e: number, f: number, g: number) => any;
    readonly wiki_sources: (a: number) => any;
    readonly wiki_storageInfo: (a: number) => any;
    readonly wiki_testConnection: (a: number, b: any) => any;
    readonly wiki_vectorIndexStatus: (a: number) => any;
    readonly wiki_vectorRebuildJob: (a: number) => any;
    readonly wasm_bindgen__convert__closures_____invoke__h280a09949a57c6fe: (a: number, b: number, c: any, d: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__hc24ee4a1788f9b5a: (a: number, b: number, c: any) => [number, number];
    readonly wasm_bindgen__convert__closures_____invoke__h241ff9afb7847631: (a: number, b: number, c: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__h58cdd0d39225fdca: (a: number, b: number, c: any) => void;
    readonly wasm_bindgen__convert__closures_____invoke__h58dcae5f85b6c0e2: (a: number, b: number) => void;
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __wbindgen_exn_store: (a: number) => void;
    readonly __externref_table_alloc: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_destroy_closure: (a: number, b: number) => void;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __externref_drop_slice: (a: number, b: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
