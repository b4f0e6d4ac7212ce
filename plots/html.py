"""``report.html`` beside ``report.md``: the same report as one self-contained file.

The report is written as Markdown by plots.report; this turns that Markdown (the few constructs
the report uses: headings, tables, images, block quotes, list items, paragraphs, ``code`` and
**bold**) into HTML with every figure inlined as a base64 PNG, so the file can be mailed or opened
anywhere without the ``figures/`` directory.  No script, no external resource.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

__all__ = ["markdown_to_html", "write_html"]

_STYLE = """
body { font-family: sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
blockquote { border-left: 4px solid #d9822b; background: #fff6ec; margin: 0.5em 0; padding: 0.3em 0.8em; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""

_IMAGE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)$")


def _inline(text: str) -> str:
    """Escape, then ``code`` and **bold**."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` is a literal bar inside a cell)."""
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.strip().replace("\\|", "|") for p in parts]


def _image(alt: str, src: str, base: Path) -> str:
    path = (base / src).resolve()
    if path.suffix.lower() != ".png" or not path.is_file():
        raise ValueError(f"{base / 'report.md'}: figure {src} is not a PNG file next to the report")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def markdown_to_html(markdown: str, base: Path, title: str = "Report") -> str:
    """The report's Markdown as a complete HTML document; images are read relative to ``base``."""
    body: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = re.match(r"^(#{1,6}) (.*)$", line)
        image = _IMAGE.match(line.strip())
        if heading:
            level = len(heading.group(1))
            body.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
        elif image:
            body.append(_image(image.group("alt"), image.group("src"), base))
            i += 1
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            head, rest = _cells(rows[0]), [r for r in rows[1:] if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", r)]
            body.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head)
                        + "</tr></thead><tbody>"
                        + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in _cells(r)) + "</tr>"
                                  for r in rest) + "</tbody></table>")
        elif line.startswith("> "):
            quote = []
            while i < len(lines) and lines[i].startswith("> "):
                quote.append(_inline(lines[i][2:]))
                i += 1
            body.append("<blockquote>" + "<br>".join(quote) + "</blockquote>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            body.append("<ul>" + "".join(items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"^(#|\||> |- |!\[)", lines[i]):
                para.append(_inline(lines[i]))
                i += 1
            body.append("<p>" + " ".join(para) + "</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_html(report_md: Path) -> Path:
    """Write ``report.html`` beside ``report_md`` (figures inlined); returns its path."""
    report_md = Path(report_md)
    text = report_md.read_text(encoding="utf-8")
    first = text.splitlines()[0] if text else "Report"
    path = report_md.with_suffix(".html")
    path.write_text(markdown_to_html(text, report_md.parent, first.lstrip("# ")), encoding="utf-8")
    return path
