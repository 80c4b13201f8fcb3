#!/usr/bin/env python3
"""Counts stringly-typed stored values in non-test Rust code (issue #12, acceptance point 3).

  stringly.py [SRC] [-v]

A hit is a string literal whose whole text equals a value the database stores for a study,
participant, run or trial status, a survey page, a response phase / trial measure, or an error
class, found outside that enum's SQL mapping. The mapping is the `as_str` / `parse` /
`from_str` functions of an `impl` of one of the enums below, or a `text_enum!` / `stored_names!` invocation
(`src/store/columns.rs`, `src/domain/run.rs`). Comments and `#[cfg(test)]` modules are skipped, as
`house.py` does. Stdlib only; reads text, so a hit may be a word that happens to equal a value
(e.g. a CSV header `"situation"`): `-v` prints each one with its place.

Exit status 1 when something is found.
"""
import os, re, sys

# Stored values, by the enum that owns them (see migrations/*/..._initial/up.sql).
VALUES = {
    "StudyStatus": ["draft", "open", "closed"],
    "ParticipantStatus": ["active", "completed", "withdrawn", "no_consent", "failed_check", "screened_out"],
    "RunStatus": ["queued", "running", "paused", "cancelled", "completed", "failed"],
    "TrialStatus": ["pending", "leased", "done", "failed"],
    "Page": ["consent", "demographics", "feelings-now", "situation", "feelings-imagined",
             "check", "debrief", "done", "ended", "withdrawn"],
    "Measure": ["default", "evoked"],
    "ErrorClass": ["rate_limited", "server", "timeout", "connection", "auth", "quota",
                   "unknown_model", "bad_request", "parse", "truncated", "refused", "blocked",
                   # "prompt" too, left out here: it is also a key of questionnaires.json.
                   "abandoned", "interrupted"],
    "PageEvent": ["shown", "submitted"],
}
STORED = {v for vs in VALUES.values() for v in vs}
ENUMS = set(VALUES) | {"Outcome"}
MAPPING_FNS = {"as_str", "parse", "from_str"}


def files(src):
    for root, _, names in os.walk(src):
        for n in sorted(names):
            if n.endswith(".rs"):
                yield os.path.join(root, n)


def scan(text):
    """Blank comments (keeping offsets) and list string literals as (start, end, content)."""
    out, lits, i, n = list(text), [], 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j); i = j; continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j); i = j; continue
        prev = text[i - 1] if i else " "
        m = re.match(r'b?r(#*)"', text[i:i + 10]) if c in "rb" and not (prev.isalnum() or prev == "_") else None
        if m:
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            lits.append((i, j, text[i + m.end():j - len(end)]))
            blank(i, j); i = j; continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            lits.append((i, j + 1, text[i + 1:j]))
            blank(i, j + 1); i = j + 1; continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:i + 12])
            if m:
                blank(i, i + m.end()); i += m.end(); continue
        i += 1
    return "".join(out), lits


def block_end(code, open_brace):
    depth, j = 1, open_brace + 1
    while j < len(code) and depth:
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        j += 1
    return j


def paren_end(code, open_at):
    """End of the bracketed group opened at `open_at` (`(` or `{`)."""
    close = {"(": ")", "{": "}"}[code[open_at]]
    depth, j = 1, open_at + 1
    while j < len(code) and depth:
        if code[j] == code[open_at]:
            depth += 1
        elif code[j] == close:
            depth -= 1
        j += 1
    return j


def excluded_regions(code):
    """Test modules, and the enums' mapping code."""
    regions = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(#\[[^\]]*\]\s*)*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        regions.append((m.start(), block_end(code, m.end() - 1)))
    # A form field's name is declared once (`const CONSENT_FIELD: &str = "consent";`): it is the
    # name of an HTML input, not a stored value, even where the words coincide.
    for m in re.finditer(r"\bconst\s+[A-Z_]*_FIELD\s*:\s*&(?:'static\s+)?str\s*=[^;]*;", code):
        regions.append((m.start(), m.end()))
    for m in re.finditer(r"\b(?:text_enum|stored_names)!\s*[({]", code):
        regions.append((m.start(), paren_end(code, m.end() - 1)))
    for m in re.finditer(r"\bimpl\b([^{;]*)\{", code):
        names = set(re.findall(r"\w+", m.group(1)))
        target = m.group(1).split(" for ")[-1]
        if not (set(re.findall(r"\w+", target)) & ENUMS or names & ENUMS and " for " not in m.group(1)):
            continue
        end = block_end(code, m.end() - 1)
        for f in re.finditer(r"\bfn\s+(\w+)[^{;]*\{", code[m.end():end]):
            if f.group(1) in MAPPING_FNS:
                s = m.end() + f.end() - 1
                regions.append((m.end() + f.start(), block_end(code, s)))
    return regions


def hits(src):
    found = []
    for path in files(src):
        text = open(path, encoding="utf-8").read()
        code, lits = scan(text)
        regions = excluded_regions(code)
        for a, _, content in lits:
            # A whole literal equal to a stored value, or one quoted inside SQL (`status = 'done'`).
            quoted = {q for q in re.findall(r"'([a-z_-]+)'", content) if q in STORED}
            if (content in STORED or quoted) and not any(s <= a < e for s, e in regions):
                found.append((path, text.count("\n", 0, a) + 1, content))
    return found


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    src = args[0] if args else "src"
    found = hits(src)
    if verbose:
        for path, line, content in found:
            print(f"{path}:{line}: {content!r}")
    print(f"{len(found)} stored status/page/phase/measure/error-class literal(s) outside their enum's mapping")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
