// DOM clean-up before article extraction (www/src/convert.js): lazy images, code blocks that are
// not <pre><code>, and math. Each step rewrites the parsed page in place into the one shape the
// markdown rules read, before scripts and hidden copies are removed.

// ---------------------------------------------------------------- images (F43)

/** Attributes lazy-loading scripts keep an image's real URL in, most specific first. */
const LAZY_SRC = ["data-src", "data-lazy-src", "data-original", "data-lazy", "data-original-src", "data-url", "data-hi-res-src", "data-full-src"];
const LAZY_SRCSET = ["data-srcset", "data-lazy-srcset", "srcset"];

/** True when `src` is no image of its own: missing, a tiny inline placeholder, or a spacer file. */
function placeholderSrc(src) {
  if (!src || !src.trim()) return true;
  const s = src.trim();
  if (/^data:/i.test(s)) return s.length < 512; // a 1×1 GIF or SVG stand-in, not a picture
  return /(^|\/)(blank|spacer|pixel|placeholder|transparent|lazy[-_]?load(er|ing)?|grey|gray)\.(gif|png|svg|jpe?g|webp)(\?|$)/i.test(s);
}

/**
 * The widest candidate of a `srcset` value ("a.png 1x, b.png 2x" or "a.png 480w, b.png 960w"), or
 * `null`. Candidates are split at commas that follow whitespace or a descriptor, so URLs holding
 * commas survive.
 */
export function bestSrcset(srcset) {
  let best = null;
  for (const part of (srcset || "").split(/,\s+(?=\S)|,(?=[^,\s]+\s+\d)/)) {
    const [url, descriptor = "1x"] = part.trim().split(/\s+/);
    if (!url || /^data:/i.test(url)) continue;
    const m = /^(\d+(?:\.\d+)?)([wx])$/i.exec(descriptor);
    const size = m ? Number(m[1]) * (m[2].toLowerCase() === "w" ? 1 : 10000) : 10000;
    if (!best || size > best.size) best = { url, size };
  }
  return best ? best.url : null;
}

/**
 * Gives every image whose `src` is missing or a placeholder the URL a lazy loader would have set:
 * `data-src` and its kin first, then the widest `srcset` candidate (its own, a lazy one, or a
 * `<picture>`'s `<source>`). Relative URLs are resolved later, against the page's URL.
 */
export function normaliseImages(doc) {
  for (const img of doc.querySelectorAll("img")) {
    if (!placeholderSrc(img.getAttribute("src"))) continue;
    let url = null;
    for (const attr of LAZY_SRC) {
      const v = img.getAttribute(attr);
      if (v && !placeholderSrc(v)) { url = v.trim(); break; }
    }
    if (!url) {
      const sources = [img, ...(img.parentElement && img.parentElement.nodeName === "PICTURE" ? img.parentElement.querySelectorAll("source") : [])];
      for (const el of sources) {
        for (const attr of LAZY_SRCSET) {
          url = bestSrcset(el.getAttribute(attr));
          if (url) break;
        }
        if (url) break;
      }
    }
    if (url) img.setAttribute("src", url);
    else if (img.getAttribute("src") && placeholderSrc(img.getAttribute("src"))) img.removeAttribute("src");
  }
}

// ---------------------------------------------------------------- code (F41)

/** Line-number gutters of highlighters (Pygments, highlight.js, Prism, GitHub, Enlighter…). */
const GUTTER = ".linenos, .lineno, .linenodiv, .line-numbers-rows, .hljs-ln-numbers, .gutter, td.blob-num, .react-line-number, .enlighter-gutter, .line-number";
/** Class words that name no language. */
const NO_LANGUAGE = new Set(["", "none", "nohighlight", "default", "code", "notranslate", "highlight", "sourcecode", "hljs", "codehilite", "prettyprint", "linenums", "enlighterjsraw", "source", "src", "block"]);

/** The language a class list names: `language-x`, `lang-x`, `highlight-source-x`, `highlight-x`, `brush: x`, `sourceCode x`. */
function languageOf(el) {
  for (const attr of ["data-enlighter-language", "data-lang", "data-language", "lang"]) {
    const v = el.getAttribute && (el.getAttribute(attr) || "").trim().toLowerCase();
    if (v && attr !== "lang" && !NO_LANGUAGE.has(v)) return v;
  }
  const cls = (el.getAttribute && el.getAttribute("class")) || "";
  const patterns = [/(?:^|\s)(?:language|lang)-([\w+#.-]+)/i, /(?:^|\s)highlight-(?:source|text)-([\w+#-]+)/i, /(?:^|\s)highlight-([\w+#-]+)/i, /brush:\s*([\w+#-]+)/i, /(?:^|\s)sourceCode\s+([\w+#-]+)/i];
  for (const re of patterns) {
    const m = re.exec(cls);
    if (m && !NO_LANGUAGE.has(m[1].toLowerCase())) return m[1].toLowerCase();
  }
  return "";
}

/**
 * Rewrites every code block into `<pre><code class="language-x">text</code></pre>`, the shape the
 * fenced-code rule reads verbatim: `<pre>` without `<code>` (Sphinx, GitHub, Enlighter, Pygments),
 * highlighter spans flattened, `<br>` as line breaks, line-number gutters dropped (a Pygments
 * line-number table becomes its code cell), the language taken from the block or its wrappers.
 */
export function normaliseCode(doc) {
  // Gutter tables: a table whose cells are a gutter and code becomes the code.
  for (const table of doc.querySelectorAll("table")) {
    if (!table.isConnected || !table.querySelector("pre")) continue;
    const cells = [...table.querySelectorAll("td, th")].filter((c) => c.closest("table") === table);
    const gutters = cells.filter((c) => c.matches(GUTTER) || c.querySelector(GUTTER));
    const code = cells.filter((c) => !gutters.includes(c));
    if (!gutters.length || code.length !== 1) continue;
    const lang = languageOf(table) || languageOf(table.parentElement || table);
    const wrapper = doc.createElement("div");
    if (lang) wrapper.className = `language-${lang}`;
    wrapper.append(...code[0].childNodes);
    table.replaceWith(wrapper);
  }
  // Line tables: one row per line, a gutter cell and a code cell (highlight.js line numbers,
  // GitHub's blob view): the code cells' lines, as one block.
  for (const table of doc.querySelectorAll("table")) {
    if (!table.isConnected) continue;
    const rows = [...table.querySelectorAll("tr")].filter((r) => r.closest("table") === table);
    if (rows.length < 2) continue;
    const lines = [];
    for (const row of rows) {
      const cells = [...row.children].filter((c) => c.nodeName === "TD" || c.nodeName === "TH");
      const gutter = (c) => c.matches(GUTTER) || !!c.querySelector(GUTTER) || (c.hasAttribute("data-line-number") && !c.textContent.trim());
      const code = cells.filter((c) => !gutter(c));
      if (code.length !== 1 || code.length === cells.length) { lines.length = 0; break; }
      lines.push(code[0].textContent.replace(/\n$/, ""));
    }
    if (!lines.length) continue;
    const text = doc.createTextNode(lines.join("\n"));
    if (table.closest("pre")) table.replaceWith(text);
    else {
      const pre = doc.createElement("pre");
      pre.className = table.className;
      pre.append(text);
      table.replaceWith(pre);
    }
  }
  for (const el of doc.querySelectorAll(GUTTER)) if (el.closest("pre")) el.remove();
  // Multi-line <code> standing alone in a block (no <pre>): a code block too.
  for (const code of doc.querySelectorAll("code")) {
    if (code.closest("pre") || !code.parentElement) continue;
    const parent = code.parentElement;
    const alone = parent.matches("div, figure, section, article, body") && [...parent.childNodes].every((n) => n === code || (n.nodeType === 3 && !n.textContent.trim()));
    if (alone && (code.querySelector("br") || code.textContent.trim().includes("\n"))) {
      const pre = doc.createElement("pre");
      code.replaceWith(pre);
      pre.append(code);
    }
  }
  for (const pre of doc.querySelectorAll("pre")) {
    if (!pre.isConnected || pre.parentElement?.closest("pre")) continue;
    for (const br of pre.querySelectorAll("br")) br.replaceWith("\n");
    const codes = pre.querySelectorAll("code");
    const inner = codes.length === 1 && !pre.textContent.replace(codes[0].textContent, "").trim() ? codes[0] : null;
    let lang = inner ? languageOf(inner) : "";
    for (let el = pre, depth = 0; !lang && el && depth < 4; el = el.parentElement, depth++) lang = languageOf(el);
    const text = (inner || pre).textContent;
    const code = doc.createElement("code");
    if (lang) code.className = `language-${lang}`;
    code.textContent = text;
    const fresh = doc.createElement("pre");
    fresh.append(code);
    pre.replaceWith(fresh);
  }
}

// ---------------------------------------------------------------- math (F42)

const GREEK = {
  α: "alpha", β: "beta", γ: "gamma", δ: "delta", ε: "epsilon", ϵ: "epsilon", ζ: "zeta", η: "eta", θ: "theta", ϑ: "vartheta",
  ι: "iota", κ: "kappa", λ: "lambda", μ: "mu", ν: "nu", ξ: "xi", π: "pi", ρ: "rho", σ: "sigma", ς: "varsigma", τ: "tau",
  υ: "upsilon", φ: "phi", ϕ: "phi", χ: "chi", ψ: "psi", ω: "omega", Γ: "Gamma", Δ: "Delta", Θ: "Theta", Λ: "Lambda",
  Ξ: "Xi", Π: "Pi", Σ: "Sigma", Φ: "Phi", Ψ: "Psi", Ω: "Omega",
};
const SYMBOL = {
  "×": "\\times", "·": "\\cdot", "⋅": "\\cdot", "÷": "\\div", "±": "\\pm", "∓": "\\mp", "≤": "\\leq", "≥": "\\geq", "≠": "\\neq",
  "≈": "\\approx", "≡": "\\equiv", "∼": "\\sim", "∝": "\\propto", "∞": "\\infty", "∂": "\\partial", "∇": "\\nabla",
  "∑": "\\sum", "∏": "\\prod", "∫": "\\int", "∮": "\\oint", "√": "\\sqrt", "→": "\\to", "←": "\\leftarrow", "⇒": "\\Rightarrow",
  "⇔": "\\Leftrightarrow", "↦": "\\mapsto", "∈": "\\in", "∉": "\\notin", "⊂": "\\subset", "⊆": "\\subseteq", "∪": "\\cup",
  "∩": "\\cap", "∅": "\\emptyset", "∀": "\\forall", "∃": "\\exists", "¬": "\\neg", "∧": "\\wedge", "∨": "\\vee", "…": "\\ldots",
  "⋯": "\\cdots", "′": "'", "−": "-", "∘": "\\circ", "⊗": "\\otimes", "⊕": "\\oplus", "ℝ": "\\mathbb{R}", "ℕ": "\\mathbb{N}",
  "ℤ": "\\mathbb{Z}", "ℚ": "\\mathbb{Q}", "ℂ": "\\mathbb{C}", "⟨": "\\langle", "⟩": "\\rangle", "‖": "\\|",
};
const FUNCTIONS = new Set(["sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "log", "ln", "lg", "exp", "lim", "max", "min", "sup", "inf", "det", "dim", "ker", "deg", "gcd", "arg", "Pr"]);
const ACCENTS = { "^": "\\hat", "ˆ": "\\hat", "¯": "\\bar", "‾": "\\overline", "~": "\\tilde", "˜": "\\tilde", "→": "\\vec", "⃗": "\\vec", "˙": "\\dot", "¨": "\\ddot" };

function texChar(ch) {
  if (GREEK[ch]) return `\\${GREEK[ch]}`;
  if (SYMBOL[ch]) return SYMBOL[ch];
  if ("{}".includes(ch)) return `\\${ch}`;
  return ch;
}

const texText = (s) => [...s.trim()].map(texChar).join("");
/** Joins TeX pieces, with a space where a command would run into a letter. */
const joinTex = (parts) => parts.reduce((out, p) => (/\\[A-Za-z]+$/.test(out) && /^[A-Za-z]/.test(p) ? `${out} ${p}` : out + p), "");
const group = (s) => (s.length === 1 || /^\\[A-Za-z]+$/.test(s) ? s : `{${s}}`);

/**
 * Presentation MathML as TeX: tokens, scripts, fractions, roots, fences, over/under marks and
 * tables. Unknown elements give their children's TeX, so no text is lost.
 */
export function mathmlToTex(node) {
  if (node.nodeType === 3) return texText(node.textContent);
  if (node.nodeType !== 1) return "";
  const name = node.localName.toLowerCase();
  const kids = [...node.children];
  const tex = (i) => (kids[i] ? mathmlToTex(kids[i]) : "");
  const all = () => joinTex(kids.map(mathmlToTex));
  switch (name) {
    case "annotation": case "annotation-xml": case "mphantom": case "none": case "mprescripts": return "";
    case "semantics": return tex(0);
    case "mi": {
      const t = node.textContent.trim();
      return FUNCTIONS.has(t) ? `\\${t}` : t.length > 1 && /^[A-Za-z]+$/.test(t) ? `\\mathrm{${t}}` : texText(t);
    }
    case "mn": return node.textContent.trim();
    case "mo": { const t = node.textContent.trim(); return t.length === 1 ? texChar(t) : t; }
    case "mtext": { const t = node.textContent.replace(/\s+/g, " ").trim(); return t ? `\\text{${t}}` : ""; }
    case "ms": return `\\text{"${node.textContent.trim()}"}`;
    case "mspace": return " ";
    case "msup": return `${group(tex(0))}^{${tex(1)}}`;
    case "msub": return `${group(tex(0))}_{${tex(1)}}`;
    case "msubsup": return `${group(tex(0))}_{${tex(1)}}^{${tex(2)}}`;
    case "mfrac": return `\\frac{${tex(0)}}{${tex(1)}}`;
    case "msqrt": return `\\sqrt{${all()}}`;
    case "mroot": return `\\sqrt[${tex(1)}]{${tex(0)}}`;
    case "mfenced": {
      const open = node.getAttribute("open") ?? "(";
      const close = node.getAttribute("close") ?? ")";
      const sep = node.getAttribute("separators") ?? ",";
      return `${texText(open)}${kids.map(mathmlToTex).join(sep.trim()[0] || "")}${texText(close)}`;
    }
    case "mover": case "munder": case "munderover": {
      const base = tex(0);
      const over = name === "munder" ? "" : kids[name === "mover" ? 1 : 2];
      const under = name === "mover" ? "" : kids[1];
      const overTex = over ? mathmlToTex(over) : "";
      if (name === "mover" && over && ACCENTS[over.textContent.trim()]) return `${ACCENTS[over.textContent.trim()]}{${base}}`;
      if (/^\\(sum|prod|int|oint|lim|max|min|sup|inf|bigcup|bigcap)$/.test(base)) {
        return `${base}${under ? `_{${mathmlToTex(under)}}` : ""}${over ? `^{${overTex}}` : ""}`;
      }
      let out = base;
      if (under) out = `\\underset{${mathmlToTex(under)}}{${out}}`;
      if (over) out = `\\overset{${overTex}}{${out}}`;
      return out;
    }
    case "mtable": {
      const rows = kids.filter((k) => /^(mtr|mlabeledtr)$/i.test(k.localName)).map((r) => [...r.children].map(mathmlToTex).join(" & "));
      return `\\begin{matrix} ${rows.join(" \\\\ ")} \\end{matrix}`;
    }
    default: return all();
  }
}

function mathSpan(doc, tex, display) {
  const span = doc.createElement("span");
  span.className = display ? "llm-wiki-math-display" : "llm-wiki-math-inline";
  span.textContent = tex.trim();
  return span;
}

/** The TeX of a <math> element: its TeX annotation when it has one, else its MathML read as TeX. */
function texOfMath(math) {
  const ann = [...math.querySelectorAll("annotation")].find((a) => /^(application\/(x-)?tex|text\/(x-)?latex)$/i.test(a.getAttribute("encoding") || ""));
  if (!ann) return mathmlToTex(math);
  // Wikipedia wraps each formula in `{\displaystyle …}` (or `\textstyle`): the formula is inside.
  const wrapped = /^\s*\{\\(?:displaystyle|textstyle)\s+([\s\S]*)\}\s*$/.exec(ann.textContent);
  return wrapped && balanced(wrapped[1]) ? wrapped[1] : ann.textContent;
}

/** True when every `{` of `tex` is closed in order (escaped braces aside). */
function balanced(tex) {
  let depth = 0;
  for (const m of tex.replace(/\\[{}]/g, "").matchAll(/[{}]/g)) {
    depth += m[0] === "{" ? 1 : -1;
    if (depth < 0) return false;
  }
  return depth === 0;
}

/**
 * Replaces every formula by one marker holding its TeX (`llm-wiki-math-inline` or
 * `-display`), once: MathJax 2's `<script type="math/tex">` (before scripts are dropped; its
 * preview and rendered frame go), KaTeX (the TeX annotation; the visual copy goes), MathJax 3's
 * assistive MathML, and bare or annotated `<math>`.
 */
export function normaliseMath(doc) {
  for (const script of doc.querySelectorAll("script[type^='math/' i]")) {
    const type = script.getAttribute("type").toLowerCase();
    const display = /mode\s*=\s*display/.test(type);
    let tex = script.textContent;
    if (type.startsWith("math/mml")) {
      const mdoc = new DOMParser().parseFromString(`<body>${tex}</body>`, "text/html");
      const math = mdoc.querySelector("math");
      tex = math ? texOfMath(math) : "";
    }
    const frame = script.id ? doc.getElementById(`${script.id}-Frame`) : null;
    if (frame) (frame.closest(".MathJax_Display, .MathJax_SVG_Display, .MathJax_MathML") || frame).remove();
    for (let prev = script.previousElementSibling; prev && /MathJax_(Preview|CHTML|SVG|Display)|^MathJax$/.test(prev.className); prev = script.previousElementSibling) prev.remove();
    script.replaceWith(mathSpan(doc, tex, display));
  }
  for (const katex of doc.querySelectorAll(".katex")) {
    if (!katex.isConnected) continue;
    const math = katex.querySelector("math");
    const ann = katex.querySelector("annotation");
    const tex = math ? texOfMath(math) : ann ? ann.textContent : "";
    if (!tex.trim()) continue;
    const outer = katex.closest(".katex-display") || katex;
    outer.replaceWith(mathSpan(doc, tex, outer !== katex));
  }
  for (const math of doc.querySelectorAll("math")) {
    if (!math.isConnected) continue;
    const container = math.closest("mjx-container, .mwe-math-element, .MathJax_Display, .MathJax_SVG_Display") || math;
    const display = math.getAttribute("display") === "block" || container.getAttribute("display") === "true"
      || container.matches(".MathJax_Display, .MathJax_SVG_Display") || !!math.closest(".mwe-math-display, .mwe-math-element-block");
    const tex = texOfMath(math);
    if (tex.trim()) container.replaceWith(mathSpan(doc, tex, display));
  }
}
