use std::collections::BTreeMap;

use serde_json::Value;

use super::*;
use crate::error::Error;
use crate::model::Page;
use crate::text::sha256_hex;
use crate::vault_files::json::vault_json_error;
use crate::vault_files::zip::*;

/// `.llm-wiki/*.json` files are read straight into their types; errors keep the wording of
/// parsing into a `Value` first and converting second. (A file with both a shape error and a
/// later syntax error now reports the shape error.)
#[test]
fn vault_json_errors_keep_their_wording() {
    let two_step = |bytes: &[u8], name: &str| -> String {
        let path = format!(".llm-wiki/{name}");
        match serde_json::from_slice::<Value>(bytes) {
            Err(e) => format!("vault: {path}: {e}"),
            Ok(v) => match serde_json::from_value::<Vec<Page>>(v) {
                Err(e) => format!("vault: {name}: {e}"),
                Ok(_) => "ok".into(),
            },
        }
    };
    for bytes in [
        &br#"[{"key": 5}]"#[..],
        br#"[{"key": "a", "title": "A"}]"#,
        br#"{"key": "a"}"#,
        br#"[{"key": "a", "kind": "nope"}]"#,
        b"[\n{\"key\": ",
        b"[",
        b"[] x",
    ] {
        let e = serde_json::from_slice::<Option<Vec<Page>>>(bytes).unwrap_err();
        assert_eq!(
            vault_json_error(".llm-wiki/pages.json", "pages.json", &e).to_string(),
            Error::InvalidInput(two_step(bytes, "pages.json")).to_string(),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn zip_paths_are_checked() {
    assert_eq!(safe_path("a/./b//c.md").as_deref(), Some("a/b/c.md"));
    assert_eq!(safe_path("a\\b.md").as_deref(), Some("a/b.md"));
    for bad in ["../x", "a/../../x", "/etc/passwd", "C:/x", "a/\u{0}b", ""] {
        assert_eq!(safe_path(bad), None, "{bad:?}");
    }
}

#[test]
fn zips_are_deterministic_and_read_back() {
    let files: BTreeMap<String, Vec<u8>> = [
        ("b.md".to_string(), b"# B\n".to_vec()),
        ("a/人工智能.md".to_string(), "内容".as_bytes().to_vec()),
    ]
    .into();
    let z1 = write_zip(&files).unwrap();
    assert_eq!(write_zip(&files).unwrap(), z1);
    assert_eq!(read_zip(&z1).unwrap(), files);
    assert!(matches!(
        read_zip(b"not a zip"),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn wrapping_folders_are_removed_only_around_a_vault() {
    let wrapped: BTreeMap<String, Vec<u8>> = [
        ("MyVault/.obsidian/app.json".to_string(), b"{}".to_vec()),
        ("MyVault/Notes.md".to_string(), b"x".to_vec()),
    ]
    .into();
    let read = read_zip(&write_zip(&wrapped).unwrap()).unwrap();
    assert_eq!(
        read.keys().collect::<Vec<_>>(),
        vec![".obsidian/app.json", "Notes.md"]
    );
    let folder: BTreeMap<String, Vec<u8>> = [
        ("notes/a.md".to_string(), b"x".to_vec()),
        ("notes/b.md".to_string(), b"y".to_vec()),
    ]
    .into();
    let read = read_zip(&write_zip(&folder).unwrap()).unwrap();
    assert_eq!(
        read.keys().collect::<Vec<_>>(),
        vec!["notes/a.md", "notes/b.md"]
    );
}

#[test]
fn attachment_names() {
    let a = |name: &str, sha: &str| Asset {
        name: name.into(),
        mime: "image/png".into(),
        sha256: sha.into(),
        bytes: 1,
        op: 1,
        description: None,
    };
    let existing = vec![a("diagram.png", &sha256_hex(b"one"))];
    let (same, new) = plan_asset(&existing, "Diagram.PNG", "", b"one", 2);
    assert!(!new);
    assert_eq!(same.name, "diagram.png");
    let (other, new) = plan_asset(&existing, "img/diagram.png", "image/png", b"two", 2);
    assert!(new);
    assert_eq!(
        other.name,
        format!("diagram ~{}.png", &sha256_hex(b"two")[..6])
    );
    assert_eq!(asset_name("C:\\clips\\a:b?.jpg"), "a b .jpg");
    assert_eq!(mime_for("x.JPEG"), "image/jpeg");
}
