#!/usr/bin/env python3
"""check_editorconfig.py — the tree's text files against its .editorconfig.

Reads SOURCE/.editorconfig (sections, globs with *, **, ?, {a,b}; later
sections win) and checks, for every text file of the tree (git's tracked and
untracked-but-not-ignored files; binary files are passed over), the
properties it sets: insert_final_newline, trim_trailing_whitespace, and
indent_style (tab: no run of tab_width spaces in a line's leading
whitespace, where a tab belongs; space: no tab there). Prints one line per
offending file (the first offending line and how many) and exits 1 if there
is any, 0 otherwise.

Usage: check_editorconfig.py [SOURCE]   (default: FEEDER_SOURCE, or the tree
this file is in)."""
import os
import re
import subprocess
import sys


def glob_regex(pat):
    """An editorconfig glob as a regex over a path relative to the root."""
    out, i = [], 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "{":
            j = pat.index("}", i)
            out.append("(?:" + "|".join(re.escape(a) for a in pat[i + 1:j].split(",")) + ")")
            i = j + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    # A glob without a slash matches a file name in any folder.
    if "/" not in pat:
        return re.compile("(?:.*/)?" + body + "$")
    return re.compile(body.lstrip("/") + "$")


def read_config(path):
    sections, cur = [], None
    for raw in open(path, encoding="utf-8"):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            cur = (glob_regex(line[1:-1]), {})
            sections.append(cur)
        elif "=" in line and cur is not None:
            k, v = (s.strip() for s in line.split("=", 1))
            cur[1][k.lower()] = v.lower()
    return sections


def props_for(sections, rel):
    p = {}
    for rx, kv in sections:
        if rx.match(rel):
            p.update(kv)
    return {k: v for k, v in p.items() if v != "unset"}


def tree_files(src):
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (an unpacked archive): every file but builds.
        names = []
        for d, dirs, files in os.walk(src):
            rel = os.path.relpath(d, src)
            dirs[:] = [x for x in dirs if not (x.startswith(".git") or x == "__pycache__" or
                                              (rel == "." and x.startswith("build")))]
            names += [os.path.normpath(os.path.join(rel, f)) for f in files]
    return sorted(n for n in names if os.path.isfile(os.path.join(src, n)))


def text_lines(path):
    """The file's lines (with their endings), or None for a binary file."""
    data = open(path, "rb").read()
    if b"\0" in data[:8192]:
        return None, data
    try:
        return data.decode("utf-8").splitlines(keepends=True), data
    except UnicodeDecodeError:
        return None, data


def check(path, props):
    """Sentences saying what is wrong with one file (empty: nothing)."""
    lines, data = text_lines(path)
    if lines is None:
        return []
    bad = []
    if props.get("insert_final_newline") == "true" and data and not data.endswith(b"\n"):
        bad.append("no newline at the end")
    style = props.get("indent_style")
    width = int(props.get("tab_width", props.get("indent_size", "8")) or 8)
    checks = []
    if props.get("trim_trailing_whitespace") == "true":
        checks.append(("trailing whitespace", lambda l: l.rstrip("\r\n") != l.rstrip()))
    if style == "tab":
        checks.append(("spaces where a tab belongs",
                       lambda l: " " * width in l[:len(l) - len(l.lstrip(" \t"))]))
    elif style == "space":
        checks.append(("a tab in the indentation",
                       lambda l: "\t" in l[:len(l) - len(l.lstrip(" \t"))]))
    for what, test in checks:
        hits = [i + 1 for i, l in enumerate(lines) if test(l)]
        if hits:
            bad.append("%s on line %d%s" % (what, hits[0],
                                             " (and %d more)" % (len(hits) - 1) if len(hits) > 1 else ""))
    return bad


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "FEEDER_SOURCE", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    conf = os.path.join(src, ".editorconfig")
    if not os.path.isfile(conf):
        print("FAIL: %s is missing" % conf)
        return 1
    sections = read_config(conf)
    files = tree_files(src)
    nbad = 0
    for rel in files:
        bad = check(os.path.join(src, rel), props_for(sections, rel))
        if bad:
            nbad += 1
            print("%s: %s" % (rel, "; ".join(bad)))
    print("%d files checked against .editorconfig, %d with problems" % (len(files), nbad))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
