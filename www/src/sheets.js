// Spreadsheets (.xlsx) → HTML tables, for the app's markdown conversion (issue #26; Decision 2).
// Read with ExcelJS, which knows shared and inline strings, dates, formulas' cached results, rich
// text and hyperlinks. Bundled by scripts/build.sh into www/build/sheets.js and loaded on first use.
import ExcelJS from "exceljs";

/** Rows kept per sheet; the rest are left out and the sheet says so. */
export const MAX_ROWS = 1000;
/** Columns kept per sheet, likewise. */
export const MAX_COLUMNS = 50;

/**
 * A workbook as `{ sheets: [{ name, html, rows, columns, cut }] }`: each sheet that holds a value
 * as one HTML table, its first row as the header, at most `MAX_ROWS` rows below it and
 * `MAX_COLUMNS` columns; `rows` and `columns` are the sheet's own counts and `cut` says whether
 * any were left out. Empty rows are dropped. Throws `Error` with `code` `XLSX_INVALID` for bytes
 * that are not a workbook.
 */
export async function xlsxToTables(bytes) {
  const workbook = new ExcelJS.Workbook();
  try {
    await workbook.xlsx.load(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  } catch (e) {
    throw Object.assign(new Error(`not a readable workbook: ${e && e.message ? e.message : e}`), { code: "XLSX_INVALID" });
  }
  const sheets = [];
  workbook.eachSheet((sheet) => {
    const rows = [];
    let columns = 0;
    sheet.eachRow({ includeEmpty: false }, (row) => {
      const cells = [];
      row.eachCell({ includeEmpty: true }, (cell, col) => {
        // A merged range's value once, in its first cell.
        cells[col - 1] = cell.isMerged && cell.master !== cell ? "" : cellText(cell.value, cell.numFmt);
      });
      while (cells.length && !cells.at(-1)) cells.pop();
      if (!cells.some(Boolean)) return;
      columns = Math.max(columns, cells.length);
      rows.push(cells);
    });
    if (!rows.length) return;
    const keptRows = rows.slice(0, MAX_ROWS + 1); // the header and MAX_ROWS below it
    const keptColumns = Math.min(columns, MAX_COLUMNS);
    const doc = document.implementation.createHTMLDocument("");
    const table = doc.createElement("table");
    keptRows.forEach((cells, i) => {
      const tr = table.insertRow();
      for (let c = 0; c < keptColumns; c++) {
        const cell = doc.createElement(i === 0 ? "th" : "td");
        cell.textContent = cells[c] ?? "";
        tr.append(cell);
      }
    });
    sheets.push({
      name: sheet.name, html: table.outerHTML, rows: rows.length, columns,
      cut: rows.length > keptRows.length || columns > keptColumns,
    });
  });
  return { sheets };
}

/**
 * A cell's value as text, close to what the sheet shows: dates as ISO dates (a time only when it
 * has one; a time of day alone as HH:MM[:SS]), numbers in a percent format as percents and with
 * the format's fixed decimals, other numbers to 15 significant digits (no float noise), formulas
 * by their saved result, else the formula itself.
 */
function cellText(value, numFmt = "") {
  if (value == null) return "";
  if (value instanceof Date) {
    const iso = value.toISOString();
    if (iso < "1900-01-01") return iso.slice(11, 19).replace(/:00$/, ""); // a time of day alone
    return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : iso.slice(0, 19).replace("T", " ");
  }
  if (typeof value === "number") return numberText(value, numFmt || "");
  if (typeof value !== "object") return String(value).replace(/\s+/g, " ").trim();
  if (Array.isArray(value.richText)) return value.richText.map((r) => r.text).join("").replace(/\s+/g, " ").trim();
  if ("formula" in value || "sharedFormula" in value || "result" in value) {
    if (value.result != null) return cellText(value.result, numFmt);
    return value.formula ? `=${value.formula}` : "";
  }
  if ("text" in value) return cellText(value.text, numFmt);
  if ("error" in value) return String(value.error);
  return "";
}

/** A number as its format shows it: percent and fixed decimals; else 15 significant digits. */
function numberText(n, numFmt) {
  const fmt = numFmt.split(";")[0].replace(/"[^"]*"|\[[^\]]*\]/g, "");
  const decimals = (fmt.match(/\.(0+)/) || ["", ""])[1].length;
  if (fmt.includes("%")) return `${(n * 100).toFixed(decimals)}%`;
  if (/0\.0+/.test(fmt)) return n.toFixed(decimals);
  return String(Number(n.toPrecision(15)));
}
