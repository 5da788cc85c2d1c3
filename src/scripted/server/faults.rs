//! Fault specs: the `/fault/<spec>/…` path prefix parsed into `name` / `name=value` items
//! (values percent-decoded), and the percent coding test code builds such paths with.

/// Percent-decodes `s` (`%XX`; `+` is kept).
pub fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but unreserved characters (for building fault paths).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parsed fault spec.
#[derive(Debug, Default, Clone)]
pub(super) struct Faults {
    pub(super) spec: String,
    items: Vec<(String, Option<String>)>,
}

impl Faults {
    pub(super) fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(n, _)| n == name)
    }
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.items
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }
    pub(super) fn num(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(|v| v.parse().ok())
    }
}

pub(super) fn split_faults(path: &str) -> (Faults, String) {
    let path = path.split('?').next().unwrap_or("");
    if let Some(rest) = path.strip_prefix("/fault/") {
        let (spec, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let items = spec
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|item| match item.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(percent_decode(v))),
                None => (item.to_string(), None),
            })
            .collect();
        (
            Faults {
                spec: spec.to_string(),
                items,
            },
            format!("/{rest}"),
        )
    } else {
        (Faults::default(), path.to_string())
    }
}
