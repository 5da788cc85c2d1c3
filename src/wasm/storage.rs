//! The `Wiki` methods on where the wiki is kept: the vault export and import (Decision 10), the
//! origin's storage estimate and persistence (`navigator.storage`).

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::interop::{bytes_to_js, error_to_js, js_to_rust_or_default, result_to_js};
use super::{promise, Wiki};
use crate::error::Error;
use crate::storage::browser::BackendKind;

#[wasm_bindgen]
impl Wiki {
    /// The whole wiki as a zip (the vault layout: `wiki/<kind>/<key>.md`, `raw/`, `index.md`,
    /// `log.md`, `schema.md`, `.llm-wiki/`), never containing an API key. The same wiki always
    /// gives the same bytes.
    #[wasm_bindgen(js_name = exportVault, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn export_vault(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            match inner.core.export_vault().await {
                Ok(b) => Ok(bytes_to_js(&b)),
                Err(e) => Err(error_to_js(&e)),
            }
        })
    }

    /// Imports a zip: a vault exported by llm-wiki is restored exactly (into an empty wiki only);
    /// a plain Obsidian vault's notes come in as sources and its other files as attachments. Of
    /// its notes, an Excalidraw drawing gives only its text, and a template is skipped unless
    /// `options.templates` is `"import"`; `skipped` lists what was left out and why.
    /// Throws `INVALID_INPUT` (damaged zip, non-empty wiki, hash mismatch), `QUOTA_EXCEEDED`.
    #[wasm_bindgen(js_name = importVault, unchecked_return_type = "Promise<ImportReport>")]
    pub fn import_vault(
        &self,
        bytes: Vec<u8>,
        #[wasm_bindgen(unchecked_param_type = "Partial<ImportOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let options =
            js_to_rust_or_default::<crate::vault::ImportOptions>("import options", options);
        promise(async move {
            let options = options?;
            result_to_js(inner.core.import_vault_with(&bytes, &options).await)
        })
    }

    /// Storage usage and quota of this origin, whether it is persistent, and where this wiki is
    /// kept (`backend`). A wiki kept in memory (`memoryFallback`) reports `{ persisted: false,
    /// backend: "memory" }` and no figures.
    #[wasm_bindgen(js_name = storageInfo, unchecked_return_type = "Promise<StorageInfo>")]
    pub fn storage_info(&self) -> Promise {
        let kind = self.inner.core.storage().kind();
        promise(async move {
            let info = js_sys::Object::new();
            let _ = Reflect::set(&info, &"backend".into(), &kind.name().into());
            if kind == BackendKind::Memory {
                let _ = Reflect::set(&info, &"persisted".into(), &JsValue::FALSE);
                return Ok(info.into());
            }
            let manager = storage_manager()?;
            let estimate = JsFuture::from(manager.estimate().map_err(|e| js_error(&e))?)
                .await
                .map_err(|e| js_error(&e))?;
            for field in ["usage", "quota"] {
                if let Some(n) = Reflect::get(&estimate, &field.into())
                    .ok()
                    .and_then(|v| v.as_f64())
                {
                    let _ = Reflect::set(&info, &field.into(), &n.into());
                }
            }
            let persisted = JsFuture::from(manager.persisted().map_err(|e| js_error(&e))?)
                .await
                .map_err(|e| js_error(&e))?;
            let _ = Reflect::set(
                &info,
                &"persisted".into(),
                &JsValue::from_bool(persisted.is_truthy()),
            );
            Ok(info.into())
        })
    }

    /// Asks the browser to make storage persistent (`navigator.storage.persist()`); resolves to
    /// whether it is. The request is made before this returns, so a call inside a click or drop
    /// handler carries that user gesture. Headless browsers and some settings answer `false`
    /// without a prompt; a wiki kept in memory (`memoryFallback`) always answers `false`.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn persist(&self) -> Promise {
        if self.inner.core.storage().kind() == BackendKind::Memory {
            return Promise::resolve(&JsValue::FALSE);
        }
        let request = storage_manager().and_then(|m| m.persist().map_err(|e| js_error(&e)));
        promise(async move {
            let r = JsFuture::from(request?).await.map_err(|e| js_error(&e))?;
            Ok(JsValue::from_bool(r.is_truthy()))
        })
    }
}

fn js_error(e: &JsValue) -> JsValue {
    error_to_js(&Error::StorageUnavailable(
        e.as_string().unwrap_or_else(|| format!("{e:?}")),
    ))
}

fn storage_manager() -> Result<web_sys::StorageManager, JsValue> {
    crate::storage::idb::storage_manager().ok_or_else(|| {
        error_to_js(&Error::StorageUnavailable(
            "navigator.storage is not available".into(),
        ))
    })
}
