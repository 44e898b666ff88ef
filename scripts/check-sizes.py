#!/usr/bin/env python3
"""Size check (ctest size_check): no source file over 700 lines and no function over 100 lines
in src/ (issue #41's budget: a file and a function a newcomer can read at once).

Functions are found by a brace-matching scan of the source with comments, string and character
literals blanked: a '{' at namespace or class scope whose header (the text since the previous
';', '{' or '}') ends in a parameter list, optionally followed by qualifiers, a trailing return
type or a constructor's initialiser list, opens a function; namespace, class, struct, union,
enum and extern blocks are walked into; anything else (a table's '= {', an enum body) is data.
A function's length is the lines from its opening to its closing brace.

Exceptions live in scripts/size-budget.txt, one per line: 'file <path> <max lines>' or
'function <path> <name> <max lines>', each with a reason after '#'. An exception is a ceiling,
not a pass: the entry fails when the file or function grows past it, and when it is no longer
needed (the file or function is back under the budget, or gone), so the list only shrinks.

  check-sizes.py [--list N]   # --list N: print every function longer than N lines and exit 0
"""
import os
import re
import sys

FILE_BUDGET = 700
FUNCTION_BUDGET = 100
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blank(text):
    """Comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c); i += 1; continue
            end = text.find(')' + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A quote after a digit or letter is a digit separator (1'000) or a prefix's (u8'x').
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + ' ' * (j - i - 2) + c if j - i >= 2 else ' ' * (j - i)); i = j
        else:
            out.append(c); i += 1
    return ''.join(out)


SCOPE = re.compile(r'\b(namespace|class|struct|union|enum)\b|\bextern\s*"')
QUALIFIERS = re.compile(
    r'\)\s*(const|volatile|noexcept(\s*\([^()]*\))?|override|final|mutable|&|&&|\s)*'
    r'(->\s*[\w:<>,\s*&]+)?\s*$')


def function_name(header):
    """The name before the parameter list at nesting depth 0, e.g. 'XpcsFitSession::XpcsFitSession'."""
    depth = 0
    for k, ch in enumerate(header):
        if ch in '<':
            depth += 1
        elif ch == '>' and depth > 0:
            depth -= 1
        elif ch == '(' and depth == 0:
            m = re.search(r'((?:[\w~]+(?:<[^()]*>)?::)*(?:operator\s*\S+?|~?\w+))\s*$', header[:k])
            return m.group(1).replace(' ', '') if m else '?'
    return '?'


def is_function(header):
    h = header.strip()
    if not h or '(' not in h:
        return False
    if re.match(r'^(if|for|while|switch|catch|do|else)\b', h):
        return False
    # A constructor's initialiser list: "...) : a_(x), b_{y}" — the header's own parameter
    # list closes before the first ':' that is not part of '::'.
    m = re.search(r'\)\s*(?:noexcept\s*)?:(?!:)', h)
    if m:
        return True
    if '=' in re.sub(r'(==|!=|<=|>=|operator\s*\S*=|=\s*(default|delete))', '', h.split('(')[0]):
        return False  # "T table = f({...})" or a variable's brace initialiser
    return bool(QUALIFIERS.search(h))


def scan(path):
    """(name, first_line, last_line) of every function defined at namespace or class scope."""
    text = blank(open(path, encoding='utf-8', errors='replace').read())
    funcs = []
    stack = []  # per open brace: 'scope', 'function' or 'data'
    header_start = 0
    i, n, line = 0, len(text), 1
    line_at = [0] * (n + 1)
    for k, ch in enumerate(text):
        line_at[k] = line
        if ch == '\n':
            line += 1
    line_at[n] = line
    open_at = []
    while i < n:
        ch = text[i]
        if ch == '{':
            if all(kind == 'scope' for kind in stack):
                header = text[header_start:i]
                if SCOPE.search(header) and not is_function(header):
                    kind = 'scope' if not re.search(r'\benum\b', header) else 'data'
                elif is_function(header):
                    kind = 'function'
                else:
                    kind = 'data'
            else:
                kind = 'inner'
            stack.append(kind)
            open_at.append((i, text[header_start:i]))
            header_start = i + 1
        elif ch == '}':
            if stack:
                kind = stack.pop()
                start, header = open_at.pop()
                if kind == 'function':
                    funcs.append((function_name(header), line_at[start], line_at[i]))
            header_start = i + 1
        elif ch == ';' and all(kind == 'scope' for kind in stack):
            header_start = i + 1
        elif ch == '#' and (i == 0 or text[i - 1] == '\n' or text[:i].rsplit('\n', 1)[-1].strip() == ''):
            # A preprocessor line (and its continuations) is not part of any header.
            j = i
            while True:
                e = text.find('\n', j)
                if e < 0:
                    e = n
                    break
                if text[e - 1] != '\\':
                    break
                j = e + 1
            if all(kind == 'scope' for kind in stack):
                header_start = e
            i = e
            continue
        elif ch == ':' and all(kind == 'scope' for kind in stack):
            # "public:" / "private:" in a class body ends a header.
            if re.search(r'\b(public|private|protected)\s*$', text[header_start:i]):
                header_start = i + 1
        i += 1
    return funcs


def sources():
    for base, _, files in os.walk(os.path.join(ROOT, 'src')):
        for f in sorted(files):
            if f.endswith(('.cpp', '.h')):
                p = os.path.join(base, f)
                yield os.path.relpath(p, ROOT), p


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--list':
        limit = int(sys.argv[2])
        rows = []
        for rel, p in sources():
            for name, a, b in scan(p):
                if b - a + 1 > limit:
                    rows.append((b - a + 1, rel, name, a))
        for length, rel, name, a in sorted(rows, reverse=True):
            print(f'{length:5d}  {rel}:{a}  {name}')
        return 0
    budget_file = os.path.join(ROOT, 'scripts', 'size-budget.txt')
    files, functions = {}, {}
    for raw in open(budget_file, encoding='utf-8'):
        entry = raw.split('#', 1)[0].split()
        if not entry:
            continue
        if entry[0] == 'file' and len(entry) == 3:
            files[entry[1]] = int(entry[2])
        elif entry[0] == 'function' and len(entry) == 4:
            functions[(entry[1], entry[2])] = int(entry[3])
        else:
            print(f'check-sizes: {budget_file}: cannot read "{raw.strip()}"', file=sys.stderr)
            return 2
    problems = []
    seen_files, seen_functions = set(), set()
    n_files = n_functions = 0
    for rel, p in sources():
        n_files += 1
        lines = sum(1 for _ in open(p, encoding='utf-8', errors='replace'))
        if lines > FILE_BUDGET:
            ceiling = files.get(rel)
            if ceiling is None:
                problems.append(f'{rel}: {lines} lines (budget {FILE_BUDGET})')
            elif lines > ceiling:
                problems.append(f'{rel}: {lines} lines, above its recorded ceiling {ceiling}')
            seen_files.add(rel)
        for name, a, b in scan(p):
            n_functions += 1
            length = b - a + 1
            if length <= FUNCTION_BUDGET:
                continue
            ceiling = functions.get((rel, name))
            if ceiling is None:
                problems.append(f'{rel}:{a}: {name} is {length} lines (budget {FUNCTION_BUDGET})')
            elif length > ceiling:
                problems.append(f'{rel}:{a}: {name} is {length} lines, above its ceiling {ceiling}')
            seen_functions.add((rel, name))
    for rel in files:
        if rel not in seen_files:
            problems.append(f'size-budget.txt: file {rel} is within the budget or gone: drop its entry')
    for key in functions:
        if key not in seen_functions:
            problems.append(f'size-budget.txt: function {key[0]} {key[1]} is within the budget or '
                            'gone: drop its entry')
    if problems:
        print(f'check-sizes: {len(problems)} problem(s):', file=sys.stderr)
        for p in problems:
            print('  ' + p, file=sys.stderr)
        return 1
    print(f'check-sizes: {n_files} files, {n_functions} functions within the budget '
          f'({len(files)} file and {len(functions)} function exceptions, see size-budget.txt)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
