#!/usr/bin/env python3
"""test_paths.py — the map and the docs cannot drift from the tree.

Fails (one line per problem) when
  * a source file under proto/ media/ daemon/ client/ xvec/ packer/ tools/
    dist/ is not named in ARCHITECTURE.md (by its path, or by its file name
    where that name is unique among them; `name.[ch]` names both), or
  * a repository path named in README.md, ARCHITECTURE.md, BENCHMARKS.md,
    client/python/README.md or a man page (`dir/file.ext`, `tools/...`:
    a word whose first folder is a folder of the repository) does not exist.

The files are git's (tracked, plus untracked ones git does not ignore) in a
git checkout, else every file under the folders. Only the standard library
is used. Exit 0 pass, 1 fail.
"""
import glob
import os
import re
import subprocess
import sys

SOURCE_DIRS = ("proto", "media", "daemon", "client", "xvec", "packer", "store", "tools", "dist")
# Build descriptions are not modules: the map names folders, not these.
NOT_SOURCES = ("meson.build",)
DOCS = ("README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "client/python/README.md")


def repo_files(src):
    """Paths relative to src of the files of the tree, '/'-separated."""
    try:
        top = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        top = ""
    if top and os.path.realpath(top) == os.path.realpath(src):
        out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"],
                             capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
        # A file deleted (or moved) but not yet staged is not in the tree.
        return sorted({f for f in files if os.path.lexists(os.path.join(src, f))})
    files = []
    for d in os.listdir(src):
        if d.startswith("build") or d == ".git":
            continue
        p = os.path.join(src, d)
        if os.path.isfile(p):
            files.append(d)
            continue
        for root, dirs, names in os.walk(p):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for n in names:
                files.append(os.path.relpath(os.path.join(root, n), src).replace(os.sep, "/"))
    return sorted(files)


def roff_to_text(t):
    """Enough of roff removed that paths read as in plain text."""
    t = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", t)
    t = t.replace("\\-", "-").replace("\\&", "").replace("\\(en", "-").replace("\\e", "\\")
    return t


TOKEN = re.compile(r"[A-Za-z0-9_.+/\[\]*<>{}…-]+")


def tokens(text):
    for m in TOKEN.finditer(text):
        yield m.group(0)


def expand(name):
    """`x.[ch]` names x.c and x.h."""
    m = re.search(r"\[([a-z]+)\]", name)
    if not m:
        return [name]
    return [name[:m.start()] + c + name[m.end():] for c in m.group(1)]


def check_map(src, files, failures):
    arch = os.path.join(src, "ARCHITECTURE.md")
    with open(arch, encoding="utf-8") as f:
        text = f.read()
    named = set()
    for tok in tokens(text):
        tok = tok.strip(".,;:")
        for t in expand(tok):
            named.add(t)
            named.add(t.rsplit("/", 1)[-1])
    sources = [f for f in files
               if f.split("/", 1)[0] in SOURCE_DIRS and "/" in f
               and f.rsplit("/", 1)[-1] not in NOT_SOURCES]
    base_count = {}
    for f in sources:
        b = f.rsplit("/", 1)[-1]
        base_count[b] = base_count.get(b, 0) + 1
    for f in sources:
        b = f.rsplit("/", 1)[-1]
        if f in named or (base_count[b] == 1 and b in named):
            continue
        why = "" if base_count[b] == 1 else " (its name is not unique: give the path)"
        failures.append(f"ARCHITECTURE.md does not name {f}{why}")
    return len(sources)


def check_paths(src, files, failures):
    top = {f.split("/", 1)[0] for f in files if "/" in f}
    docs = [d for d in DOCS if os.path.isfile(os.path.join(src, d))]
    docs += sorted("man/" + n for n in os.listdir(os.path.join(src, "man"))
                   if re.search(r"\.[1-8]$", n))
    checked = 0
    for doc in docs:
        with open(os.path.join(src, doc), encoding="utf-8") as f:
            text = f.read()
        if doc.startswith("man/"):
            text = roff_to_text(text)
        seen = set()
        for tok in tokens(text):
            if any(c in tok for c in "<>{}…") or "/" not in tok:
                continue
            tok = tok.rstrip(".,;:")
            if tok.startswith("./"):
                tok = tok[2:]
            first = tok.split("/", 1)[0]
            if first not in top or tok in seen:
                continue
            seen.add(tok)
            checked += 1
            ok = False
            for t in expand(tok):
                p = os.path.join(src, t.rstrip("/"))
                ok = (glob.glob(p) if "*" in t else os.path.lexists(p))
                if not ok:
                    break
            if not ok:
                failures.append(f"{doc} names {tok}, which is not in the tree")
    return len(docs), checked


def main():
    src = os.environ.get("FEEDER_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
    src = os.path.realpath(src)
    files = repo_files(src)
    failures = []
    nsrc = check_map(src, files, failures)
    ndocs, npaths = check_paths(src, files, failures)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"PASS: ARCHITECTURE.md names all {nsrc} source files; "
          f"the {npaths} repository paths named in {ndocs} documents exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
