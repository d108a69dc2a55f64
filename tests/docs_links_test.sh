#!/bin/sh
# Fails when README.md or docs/*.md names a file of the repository that does not exist, so that
# the docs stay true when files move. Checked:
#   - relative markdown links, [text](path) or [text](path#anchor), resolved from the page's folder;
#   - repository paths inside `backticks` and in fenced code blocks: a word starting with one of
#     the repository's top folders (src/, include/, leakcheck/, tools/, tests/, ...) or ./scripts/,
#     with a :line[:column] suffix dropped; {a,b} alternatives and * globs must each match a file.
# Also fails on a line left by a merge conflict (<<<<<<< , =======, >>>>>>> ), which a page can
# carry into a commit unnoticed.
# A name directly followed by <!-- verify-after-merge --> (a name another branch is creating or
# moving) is skipped.
# Usage: tests/docs_links_test.sh [REPOSITORY_ROOT]   (default: the folder above this script)
set -eu
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
exec python3 - "$root" <<'EOF'
import glob, os, re, sys

root = sys.argv[1]
tops = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
              and d not in ('.git', 'build') and not d.startswith('build-'))
marker = re.compile(r'\s*<!--\s*verify-after-merge\s*-->')
path_word = re.compile(r'(?<![\w./-])(?:\./)?((?:' + '|'.join(re.escape(t) for t in tops) +
                       r')/[\w.*{},+/-]*)')
link = re.compile(r'\]\(([^)\s]+)\)')
code_span = re.compile(r'`([^`]+)`')
conflict = re.compile(r'^(<{7} |={7}$|>{7} )')

def expand(pattern):
    m = re.search(r'\{([^{}]*)\}', pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(','):
        out += expand(pattern[:m.start()] + alt + pattern[m.end():])
    return out

def exists(base, path):
    for p in expand(path):
        full = os.path.normpath(os.path.join(base, p))
        if not (glob.glob(full) if any(c in p for c in '*?[') else os.path.exists(full)):
            return False
    return True

def skipped(line, end):
    return marker.match(line, end) is not None

pages = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
bad = 0
checked = 0
for page in pages:
    if not os.path.exists(page):
        continue
    rel = os.path.relpath(page, root)
    base = os.path.dirname(page)
    in_fence = False
    for number, line in enumerate(open(page, encoding='utf-8'), 1):
        if conflict.match(line.rstrip('\n')):
            print(f'{rel}:{number}: a merge conflict marker')
            bad += 1
        if line.lstrip().startswith('```'):
            in_fence = not in_fence
            continue
        names = []  # (name, resolved from, end of the name's markup in the line)
        for m in link.finditer(line):
            target = m.group(1)
            if re.match(r'[a-z]+:', target) or target.startswith('#'):
                continue
            names.append((target.split('#')[0], base, m.end()))
        spans = [(0, len(line), line)] if in_fence else \
                [(m.start(1), m.end() , m.group(1)) for m in code_span.finditer(line)]
        for start, end, text in spans:
            for w in path_word.finditer(text):
                word = re.sub(r'(:\d+)+$', '', w.group(1).rstrip('.,;:)'))
                names.append((word, root, end if not in_fence else start + w.end()))
        for name, where, end in names:
            if not name or skipped(line, end):
                continue
            checked += 1
            if not exists(where, name):
                print(f'{rel}:{number}: {name} does not exist')
                bad += 1
print(f'{checked} names checked in {len(pages)} pages, {bad} missing')
sys.exit(1 if bad else 0)
EOF
