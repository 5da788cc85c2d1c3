// A PDF file written byte for byte from its objects, for the PDF and OCR tests: what each page
// holds is in front of the reader.

/**
 * The PDF file of `objects` (object i + 1 is `objects[i]`: a dictionary, or a dictionary and its
 * stream), with its cross-reference table and a trailer naming `root` (the catalog's number) and,
 * when given, `info`. Strings are written as Latin-1, byte for byte (binary streams included).
 */
export function pdfFile(objects, root, info) {
  let out = "%PDF-1.4\n";
  const offsets = [];
  objects.forEach((body, i) => { offsets.push(out.length); out += `${i + 1} 0 obj\n${body}\nendobj\n`; });
  const xref = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${root} 0 R${info ? ` /Info ${info} 0 R` : ""} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}
