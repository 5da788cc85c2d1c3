//! What the endpoint client learned about endpoints, kept across calls and persisted by the wiki
//! (`meta/llm-learned`): the structured-output mode that worked, the request-parameter
//! adjustments and schema-cap refusals, and how long extract replies run.
//!
//! *Invariant:* only what this connection learned is written over what is stored
//! ([`Learned::merged_into`]), so another tab's newer entries survive.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::llm::provider::{ParamAdjust, StructuredMode};

/// What the client learned about endpoints: the structured-output mode that worked, per
/// `provider chat-URL model`, and how long extract replies run. Shared by clones; persisted by
/// the wiki (`meta/llm-learned`), where only what this connection learned is written over what
/// is stored ([`Learned::merged_into`]), so another tab's newer entries survive.
#[derive(Debug, Clone, Default)]
pub struct Learned(Rc<RefCell<LearnedState>>);

/// What a [`Learned`] holds: the entries, and which of them this connection changed.
#[derive(Debug, Clone, Default)]
struct LearnedState {
    modes: LearnedModes,
    changed_modes: std::collections::BTreeSet<String>,
    changed_ratios: std::collections::BTreeSet<String>,
    changed_no_caps: bool,
    changed_params: std::collections::BTreeSet<String>,
}

/// The serialisable content of [`Learned`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LearnedModes {
    /// Structured-output mode by endpoint key.
    pub modes: BTreeMap<String, StructuredMode>,
    /// Extract reply lengths per token of source text, the latest last (at most
    /// `RATIO_WINDOW`, 8), by `"llm:<model>|<reply cap>"`: what the compile pass cuts its
    /// chunks to (`Wiki::learned_chunk_cap` in `compile/pipeline/budget.rs`), kept so a new connection
    /// does not learn it again by paying for replies cut at the cap. Absent in records written
    /// before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reply_ratios: BTreeMap<String, Vec<f64>>,
    /// Endpoint keys (as [`LearnedModes::modes`]) that rejected a schema for its size caps
    /// (`maxItems`, `maxLength`): their schemas are sent without caps, which the parser then
    /// enforces (issue 21, item 13). Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub no_caps: std::collections::BTreeSet<String>,
    /// Request-parameter changes by endpoint key (field case F38: `max_completion_tokens` for
    /// `max_tokens`, no `temperature`). Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, ParamAdjust>,
}

impl Learned {
    /// Starts from `modes` (e.g. read from storage); nothing changed yet.
    pub fn from_modes(modes: LearnedModes) -> Self {
        Learned(Rc::new(RefCell::new(LearnedState {
            modes,
            ..Default::default()
        })))
    }
    /// A copy of what was learned.
    pub fn modes(&self) -> LearnedModes {
        self.0.borrow().modes.clone()
    }
    /// `stored` (what storage holds now) with the entries this connection changed written over
    /// it: what to store, so entries another connection stored meanwhile are kept.
    pub fn merged_into(&self, mut stored: LearnedModes) -> LearnedModes {
        let state = self.0.borrow();
        for k in &state.changed_modes {
            if let Some(m) = state.modes.modes.get(k) {
                stored.modes.insert(k.clone(), *m);
            }
        }
        for k in &state.changed_ratios {
            if let Some(r) = state.modes.reply_ratios.get(k) {
                stored.reply_ratios.insert(k.clone(), r.clone());
            }
        }
        for k in &state.changed_params {
            if let Some(p) = state.modes.params.get(k) {
                stored.params.insert(k.clone(), *p);
            }
        }
        if state.changed_no_caps {
            stored.no_caps.extend(state.modes.no_caps.iter().cloned());
        }
        stored
    }
    /// The request-parameter changes the endpoint `key` needs (F38).
    pub fn params(&self, key: &str) -> ParamAdjust {
        self.0
            .borrow()
            .modes
            .params
            .get(key)
            .copied()
            .unwrap_or_default()
    }
    /// Records the request-parameter changes the endpoint `key` needs.
    pub fn set_params(&self, key: &str, adjust: ParamAdjust) {
        let mut state = self.0.borrow_mut();
        if state.modes.params.insert(key.to_string(), adjust) != Some(adjust) {
            state.changed_params.insert(key.to_string());
        }
    }
    /// True when the endpoint `key` rejected size caps in a schema.
    pub fn rejects_caps(&self, key: &str) -> bool {
        self.0.borrow().modes.no_caps.contains(key)
    }
    /// Records that the endpoint `key` rejects size caps in a schema.
    pub fn set_rejects_caps(&self, key: &str) {
        let mut state = self.0.borrow_mut();
        if state.modes.no_caps.insert(key.to_string()) {
            state.changed_no_caps = true;
        }
    }
    /// The mode that worked for `key`.
    pub fn get(&self, key: &str) -> Option<StructuredMode> {
        self.0.borrow().modes.modes.get(key).copied()
    }
    /// Records the mode that worked for `key`; true when that changed anything.
    pub fn set(&self, key: &str, mode: StructuredMode) -> bool {
        let mut state = self.0.borrow_mut();
        let changed = state.modes.modes.insert(key.to_string(), mode) != Some(mode);
        if changed {
            state.changed_modes.insert(key.to_string());
        }
        changed
    }
    /// The extract reply lengths per source token learned for `key` (see
    /// [`LearnedModes::reply_ratios`]).
    pub fn reply_ratios(&self, key: &str) -> Option<Vec<f64>> {
        self.0.borrow().modes.reply_ratios.get(key).cloned()
    }
    /// Records the extract reply lengths per source token seen for `key`.
    pub fn set_reply_ratios(&self, key: &str, ratios: Vec<f64>) {
        let mut state = self.0.borrow_mut();
        if state.modes.reply_ratios.get(key) != Some(&ratios) {
            state.changed_ratios.insert(key.to_string());
        }
        state.modes.reply_ratios.insert(key.to_string(), ratios);
    }
}
