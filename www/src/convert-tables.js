// Tables → GFM tables for www/src/convert.js (F40). Every data table becomes a pipe table, with or
// without header cells: a header row when the first row is all <th> (or in <thead>), else an empty
// one; cells are converted on their own and flattened to one line (paragraphs and list items
// joined, pipes escaped); colspan and rowspan are expanded and ragged rows padded. A layout table
// (one cell, nested tables, headings in cells, role=presentation) is unwrapped into its cells'
// content. No table is ever kept as HTML.

const BLOCKS = "h1, h2, h3, h4, h5, h6, article, section, header, footer, nav, form, fieldset, blockquote, hr, table";

/** The rows of `table` that belong to it, not to a table nested inside. */
function ownRows(table) {
  return [...table.querySelectorAll("tr")].filter((r) => r.closest("table") === table);
}

const ownCells = (row) => [...row.children].filter((c) => c.nodeName === "TD" || c.nodeName === "TH");

/** True for a table used for page layout rather than for data. */
export function isLayoutTable(table) {
  const role = (table.getAttribute("role") || "").toLowerCase();
  if (role === "presentation" || role === "none") return true;
  const rows = ownRows(table);
  const cells = rows.flatMap(ownCells);
  if (cells.length <= 1) return true;
  return cells.some((c) => c.querySelector(BLOCKS));
}

/** One cell's markdown as one line: blocks joined, list items joined by "; ", pipes escaped. */
function cellText(markdown) {
  const blocks = markdown.trim().split(/\n{2,}/).map((block) => {
    const lines = block.split("\n")
      .filter((l) => !/^\s*(```|~~~)/.test(l))
      .map((l) => l.replace(/^\s*(?:[-*+]|\d+[.)])\s+(?=\S)/, "").trim())
      .filter(Boolean);
    const listy = block.split("\n").some((l) => /^\s*(?:[-*+]|\d+[.)])\s+\S/.test(l));
    return lines.join(listy ? "; " : " ");
  }).filter(Boolean);
  return blocks.reduce((out, b) => (!out ? b : /[.!?:;。！？]$/.test(out) ? `${out} ${b}` : `${out}; ${b}`), "")
    .replace(/\|/g, "\\|");
}

/**
 * The table rule: needs the Turndown service to convert each cell's content with the same rules
 * as the rest of the page.
 */
export function tableRule(service) {
  return {
    filter: "table",
    replacement: (_content, table) => {
      const rows = ownRows(table);
      if (isLayoutTable(table)) {
        const parts = rows.flatMap(ownCells).map((c) => service.turndown(c).trim()).filter(Boolean);
        return `\n\n${parts.join("\n\n")}\n\n`;
      }
      // The grid, with colspan and rowspan expanded.
      const grid = [];
      const pending = []; // column → { text, rows left } from a rowspan above
      rows.forEach((row, r) => {
        const out = [];
        let col = 0;
        const take = () => {
          while (pending[col] && pending[col].left > 0) {
            out[col] = pending[col].text;
            pending[col].left--;
            col++;
          }
        };
        for (const cell of ownCells(row)) {
          take();
          const text = cellText(service.turndown(cell));
          const span = Math.max(1, Math.min(50, Number(cell.getAttribute("colspan")) || 1));
          const down = Math.max(1, Math.min(500, Number(cell.getAttribute("rowspan")) || 1));
          for (let i = 0; i < span; i++) {
            out[col] = i === 0 ? text : "";
            if (down > 1) pending[col] = { text: "", left: down - 1 };
            col++;
          }
        }
        take();
        grid[r] = out;
      });
      const width = Math.max(1, ...grid.map((r) => r.length));
      const line = (cells) => `| ${Array.from({ length: width }, (_, i) => cells[i] || "").join(" | ")} |`;
      const first = rows[0];
      const headed = first && (first.parentElement?.nodeName === "THEAD" || ownCells(first).every((c) => c.nodeName === "TH"));
      const body = headed ? grid.slice(1) : grid;
      const header = headed ? grid[0] : [];
      const caption = table.querySelector("caption");
      const captionText = caption && caption.closest("table") === table ? service.turndown(caption).trim() : "";
      const lines = [line(header), `|${" --- |".repeat(width)}`, ...body.map(line)];
      return `\n\n${captionText ? `${captionText}\n\n` : ""}${lines.join("\n")}\n\n`;
    },
  };
}

/** Rows, cells and sections are read by the table rule; on their own they give their content. */
export const tableFragments = {
  filter: ["thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup", "col"],
  replacement: (content) => content,
};
