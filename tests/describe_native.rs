//! Pictures described by the model (issue 26, item 4), end to end on MemoryStorage against the
//! scripted endpoint in process, over each provider's wire format: the description is a derived
//! layer on the attachment, and a claim drawn from it cites the picture and is never verified.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::compile::pipeline::{CompileOptions, Progress};
use llm_wiki::llm::config::{Config, Provider, Secret};
use llm_wiki::llm::Cancel;
use llm_wiki::scripted::server::InProcess;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::Error;

mod common;
use common::{add, claims_of, compile_with_settings, open, W};

/// What the test picture's text chunk says: the scripted endpoint describes a PNG by it.
const SAID: &str = "The bar chart shows that Ferris sold 42 crates in 2025.";

/// A PNG of `w` × `h` grey pixels with a `tEXt` chunk `Description` = `said` (CRCs right, so a
/// browser would decode it too).
fn png(w: u32, h: u32, said: &str) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend(kind);
        out.extend(data);
        out.extend(crc.sum().to_be_bytes());
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 0, 0, 0, 0]); // 8-bit greyscale
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"tEXt",
        &[b"Description\0".as_slice(), said.as_bytes()].concat(),
    );
    let raw: Vec<u8> = (0..h)
        .flat_map(|_| std::iter::once(0u8).chain(std::iter::repeat_n(128u8, w as usize)))
        .collect();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &raw).unwrap();
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

fn config(provider: Provider, describe: bool) -> Config {
    Config {
        provider,
        base_url: "http://127.0.0.1:1".into(),
        model: "scripted-chat".into(),
        api_key: Some(Secret::new("sk-test")),
        context_window: 16_384,
        describe_images: describe,
        ..Config::default()
    }
}

/// A wiki with the picture and a source that shows it.
fn wiki_with_picture(backend: &MemoryBackend, provider: Provider, describe: bool) -> W {
    let w = open(backend, "pictures");
    block_on(w.add_attachment("sales chart.png", "image/png", &png(40, 20, SAID))).unwrap();
    add(
        &w,
        "notes/sales",
        "# Sales review\n\nThe sales team met in March to review the year.\n\n![[sales chart.png]]\n",
    );
    block_on(w.set_llm_config(config(provider, describe))).unwrap();
    w
}

/// Every chat request body sent.
fn chat_bodies(t: &InProcess) -> Vec<serde_json::Value> {
    t.state()
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "POST")
        .map(|r| r["body"].clone())
        .collect()
}

#[test]
fn a_described_picture_gives_claims_that_cite_it_over_every_provider() {
    for provider in [
        Provider::OpenAiCompatible,
        Provider::Ollama,
        Provider::Anthropic,
    ] {
        let backend = MemoryBackend::new();
        let w = wiki_with_picture(&backend, provider, true);
        let version = block_on(w.source("notes/sales"))
            .unwrap()
            .unwrap()
            .source
            .version;
        let t = InProcess::new(vec![]);
        let report = compile_with_settings(&w, t.clone());
        assert!(
            report.failed.is_empty(),
            "{provider:?}: {:?}",
            report.failed
        );
        assert_eq!(report.images.described, vec!["sales chart.png".to_string()]);
        assert!(report.images.failed.is_empty());
        assert!(report.images.usage.calls >= 1);

        // The picture went out in the provider's own shape, once.
        let bodies = chat_bodies(&t);
        let with_picture: Vec<&serde_json::Value> = bodies
            .iter()
            .filter(|b| {
                let s = b.to_string();
                s.contains("iVBORw0KGgo")
            })
            .collect();
        assert_eq!(with_picture.len(), 1, "{provider:?}");
        let user = with_picture[0]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap();
        match provider {
            Provider::OpenAiCompatible => {
                let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
                assert!(
                    url.starts_with("data:image/png;base64,iVBORw0KGgo"),
                    "{url}"
                );
            }
            Provider::Anthropic => {
                assert_eq!(user["content"][0]["type"], "image");
                assert_eq!(user["content"][0]["source"]["media_type"], "image/png");
            }
            _ => assert!(user["images"][0]
                .as_str()
                .unwrap()
                .starts_with("iVBORw0KGgo")),
        }

        // The description is kept with the attachment; the source's version did not move.
        let asset = block_on(w.assets()).unwrap().remove(0);
        let d = asset.description.expect("described");
        assert!(d.text.starts_with(SAID), "{}", d.text);
        assert_eq!(d.model, "scripted-chat");
        let after = block_on(w.source("notes/sales"))
            .unwrap()
            .unwrap()
            .source
            .version;
        assert_eq!(after, version);

        // The extract call saw it as an <image> block; the claim drawn from it cites the picture.
        assert!(bodies.iter().any(|b| b
            .to_string()
            .contains("<image name=\\\"sales chart.png\\\">")));
        let claims = claims_of(&w);
        let pictured: Vec<_> = claims
            .iter()
            .filter(|c| c.from_description.is_some())
            .collect();
        assert!(!pictured.is_empty(), "{provider:?}: {claims:?}");
        for c in &pictured {
            assert_eq!(c.from_description.as_deref(), Some("sales chart.png"));
            assert!(!c.verified, "a description never verifies");
            assert!(SAID.contains(c.quote.trim()), "{}", c.quote);
        }
        assert!(claims
            .iter()
            .any(|c| c.from_description.is_none() && c.verified));
        let page = block_on(w.page(&pictured[0].page)).unwrap().unwrap();
        let footnote = page
            .body
            .lines()
            .find(|l| l.starts_with(&format!("[^{}]:", pictured[0].id)))
            .unwrap_or_else(|| panic!("no footnote in {}", page.body));
        assert!(
            footnote.contains("picture [[sales chart.png]]"),
            "{footnote}"
        );
        assert!(footnote.contains("not verified"), "{footnote}");
    }
}

#[test]
fn without_the_setting_no_picture_is_sent() {
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::OpenAiCompatible, false);
    let t = InProcess::new(vec![]);
    let report = compile_with_settings(&w, t.clone());
    assert_eq!(report.compiled.len(), 1);
    assert!(report.images.described.is_empty());
    assert!(!chat_bodies(&t)
        .iter()
        .any(|b| b.to_string().contains("iVBORw0KGgo")));
    assert!(block_on(w.assets()).unwrap()[0].description.is_none());
    assert!(claims_of(&w).iter().all(|c| c.from_description.is_none()));
}

#[test]
fn a_text_only_model_leaves_the_text_compiled_and_says_why() {
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::OpenAiCompatible, true);
    let mut c = config(Provider::OpenAiCompatible, true);
    c.base_url = "http://127.0.0.1:1/fault/text-only".into();
    block_on(w.set_llm_config(c)).unwrap();
    let t = InProcess::new(vec![]);
    let report = compile_with_settings(&w, t);
    assert_eq!(report.compiled.len(), 1, "{:?}", report.failed);
    assert!(report.images.described.is_empty());
    assert_eq!(report.images.failed.len(), 1);
    assert_eq!(report.images.failed[0].key, "sales chart.png");
    assert_eq!(report.images.failed[0].code, "LLM_REJECTED");
    assert!(block_on(w.assets()).unwrap()[0].description.is_none());
    assert!(claims_of(&w).iter().all(|c| c.from_description.is_none()));
}

#[test]
fn describing_is_one_operation_that_rolls_back_and_progress_names_the_picture() {
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::OpenAiCompatible, true);
    let seen = std::cell::RefCell::new(Vec::new());
    block_on(w.compile_configured(
        InProcess::new(vec![]),
        &CompileOptions::default(),
        &|p| {
            if let Progress::Describing { name, index, total } = p {
                seen.borrow_mut().push((name.clone(), *index, *total));
            }
        },
        &Cancel::new(),
    ))
    .unwrap();
    assert_eq!(*seen.borrow(), vec![("sales chart.png".to_string(), 0, 1)]);
    let ops = block_on(w.operations()).unwrap();
    let describe = ops
        .iter()
        .find(|o| o.kind.as_str() == "describe")
        .expect("a describe operation");
    assert!(describe.summary.contains("sales chart.png"));

    // Described again by hand: the newer description replaces the older one.
    let again = block_on(w.describe_attachment_configured(
        InProcess::new(vec![]),
        "sales chart.png",
        &Cancel::new(),
    ))
    .unwrap();
    assert!(again.description.is_some());

    // Rolling back the first description (and the later operations on that record) leaves
    // the attachment as it was added.
    block_on(w.rollback(describe.id)).unwrap();
    assert!(block_on(w.assets()).unwrap()[0].description.is_none());
}

#[test]
fn what_cannot_be_described_is_refused_plainly() {
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::OpenAiCompatible, true);
    block_on(w.add_attachment("paper.pdf", "application/pdf", b"%PDF-1.4 not really")).unwrap();
    let t = InProcess::new(vec![]);
    let e = block_on(w.describe_attachment_configured(t.clone(), "paper.pdf", &Cancel::new()))
        .unwrap_err();
    assert!(matches!(e, Error::UnsupportedMime(_)), "{e:?}");
    let e = block_on(w.describe_attachment_configured(t.clone(), "nope.png", &Cancel::new()))
        .unwrap_err();
    assert!(matches!(e, Error::NotFound(_)), "{e:?}");
    // The offline compiler reads text only.
    block_on(w.set_llm_config(Config::default())).unwrap();
    let e = block_on(w.describe_attachment_configured(t, "sales chart.png", &Cancel::new()))
        .unwrap_err();
    assert!(matches!(e, Error::LlmConfig(_)), "{e:?}");
    assert!(block_on(w.assets())
        .unwrap()
        .iter()
        .all(|a| a.description.is_none()));
}

#[test]
fn the_type_sent_is_the_bytes_and_a_text_only_endpoint_is_sent_three_at_most() {
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::Anthropic, true);
    // A JPEG named .png: sent as what it is (Anthropic checks the data against the type).
    let jpeg = [&[0xff, 0xd8, 0xff, 0xe0][..], b"not much of a JPEG"].concat();
    block_on(w.add_attachment("photo.png", "image/png", &jpeg)).unwrap();
    let t = InProcess::new(vec![]);
    let got =
        block_on(w.describe_attachment_configured(t.clone(), "photo.png", &Cancel::new())).unwrap();
    assert!(got.description.is_some());
    let sent = chat_bodies(&t).pop().unwrap();
    assert_eq!(
        sent["messages"][0]["content"][0]["source"]["media_type"],
        "image/jpeg"
    );
    // Bytes that are no picture at all are not sent.
    block_on(w.add_attachment("fake.png", "image/png", b"plain text, really")).unwrap();
    let e = block_on(w.describe_attachment_configured(t, "fake.png", &Cancel::new())).unwrap_err();
    assert!(matches!(e, Error::UnsupportedMime(_)), "{e:?}");

    // Five pictures, a model that reads text only: three are tried, two are left, all said.
    let backend = MemoryBackend::new();
    let w = open(&backend, "many");
    let mut text = String::from("# Album\n\nFive pictures of the trip.\n\n");
    for i in 0..5 {
        let name = format!("p{i}.png");
        block_on(w.add_attachment(&name, "image/png", &png(4, 4, &format!("Picture {i}."))))
            .unwrap();
        text.push_str(&format!("![[{name}]]\n"));
    }
    add(&w, "album", &text);
    let mut c = config(Provider::OpenAiCompatible, true);
    c.base_url = "http://127.0.0.1:1/fault/text-only".into();
    block_on(w.set_llm_config(c)).unwrap();
    let t = InProcess::new(vec![]);
    let report = compile_with_settings(&w, t.clone());
    assert_eq!(report.compiled.len(), 1);
    let codes: Vec<&str> = report
        .images
        .failed
        .iter()
        .map(|f| f.code.as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "LLM_REJECTED",
            "LLM_REJECTED",
            "LLM_REJECTED",
            "NOT_TRIED",
            "NOT_TRIED"
        ]
    );
    let pictures_sent = chat_bodies(&t)
        .iter()
        .filter(|b| b.to_string().contains("image_url"))
        .count();
    assert_eq!(pictures_sent, 3);
}

#[test]
fn a_description_counts_in_the_prompt_and_goes_with_the_chunk_that_shows_it() {
    use llm_wiki::compile::extract::{images_of_chunk, ImageNote};
    let note = |name: &str| ImageNote {
        name: name.into(),
        description: format!("What {name} shows."),
    };
    let images = [note("a.png"), note("sales chart.png"), note("orphan.png")];
    let text = "![[data.png]] first\n\nthen ![](raw/assets/sales%20chart.png) and [[a.png]]";
    let first = images_of_chunk(&images, "![[data.png]] first", text, true);
    // `a.png` is not found inside `data.png`; a picture the text never names goes first.
    assert_eq!(
        first.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["orphan.png"]
    );
    let second = images_of_chunk(
        &images,
        "then ![](raw/assets/sales%20chart.png) and [[a.png]]",
        text,
        false,
    );
    assert_eq!(
        second.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["a.png", "sales chart.png"]
    );

    // The estimate counts a described picture's block.
    let backend = MemoryBackend::new();
    let w = wiki_with_picture(&backend, Provider::OpenAiCompatible, true);
    let before = block_on(w.estimate_configured(&CompileOptions::default())).unwrap();
    block_on(w.describe_attachment_configured(
        InProcess::new(vec![]),
        "sales chart.png",
        &Cancel::new(),
    ))
    .unwrap();
    let after = block_on(w.estimate_configured(&CompileOptions::default())).unwrap();
    assert!(
        after.total.input > before.total.input,
        "{} → {}",
        before.total.input,
        after.total.input
    );
}
